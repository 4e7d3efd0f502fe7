// Package walletstore is the wallet's storage encoding: users,
// friendships, conversations and messages of the chat, transfer intents,
// transfer reminders and the token secret, in the engine's Pebble database.
package walletstore

import "github.com/surge-dev/surge/internal/store"

// Store reads and writes the wallet's records in the engine's database.
type Store struct{ *store.Store }
