package tickets

import "github.com/surge-dev/surge/internal/ledger"

// Error codes of the ticketing API beyond the ledger's, carried by
// *ledger.Error like every surge API error.
const (
	CodeEventNotFound       ledger.Code = "event_not_found"
	CodeEventExists         ledger.Code = "event_exists"
	CodeReservationNotFound ledger.Code = "reservation_not_found"
	// CodeNotPayable: the reservation cannot be paid or cancelled in its
	// state (undecided, failed, expired, cancelled, paid).
	CodeNotPayable ledger.Code = "reservation_not_held"
)
