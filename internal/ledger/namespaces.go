package ledger

import (
	"strings"

	"github.com/google/uuid"
)

// Prefixes of the ids the server assigns itself. Clients of the ledger API
// may not choose ids in them: one who created the next wallet's account
// first would break every later registration, and a pending transfer
// named as a reservation's payment would be settled as one at restart.
const (
	// WalletPrefix starts every wallet's account id, "wallet:<user id>",
	// and its transfers' ids, "wallet:<user id>:<request id>".
	WalletPrefix = "wallet:"
	// PaymentPrefix starts the id of a reservation's payment,
	// "pay-<reservation id>-<attempt>".
	PaymentPrefix = "pay-"
	// AtomicPrefix starts the ids of the holds a cluster's atomic batch
	// across partitions keeps while it is decided,
	// "atomic:<batch id>.<attempt>.<shard>.<n>".
	AtomicPrefix = "atomic:"
)

// ServerAccountID reports whether id is an account id the server assigns.
func ServerAccountID(id string) bool { return strings.HasPrefix(id, WalletPrefix) }

// ServerTransferID reports whether id is a transfer id the server assigns.
func ServerTransferID(id string) bool {
	if strings.HasPrefix(id, WalletPrefix) || strings.HasPrefix(id, AtomicPrefix) {
		return true
	}
	rest, ok := strings.CutPrefix(id, PaymentPrefix)
	if !ok || len(rest) < 36 {
		return false
	}
	_, err := uuid.Parse(rest[:36])
	return err == nil
}
