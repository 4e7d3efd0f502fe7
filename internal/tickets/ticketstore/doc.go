// Package ticketstore is ticketing's storage encoding: events and the
// reservations that held seats, in the engine's Pebble database.
package ticketstore

import "github.com/surge-dev/surge/internal/store"

// Store reads and writes ticketing's records in the engine's database.
type Store struct{ *store.Store }
