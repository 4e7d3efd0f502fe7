// Package ledgerstore is the ledger's storage encoding: its key layout in
// the engine's Pebble database, compact binary records of accounts,
// transfers and holds, and the history kept as chunks and a journal
// (history.go).
package ledgerstore

import "github.com/surge-dev/surge/internal/store"

// Store reads the ledger's records from the engine's database.
type Store struct{ *store.Store }
