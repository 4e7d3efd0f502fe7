package engine

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
)

// Command is one entry of a shard's Log. Commands are plain data: applying
// one is up to the shard and the domain code, so a command could as well
// have come from a durable log.
type Command interface{ command() }

// Envelope carries a command through a Log, with the in-process call
// waiting for its outcome (nil when nobody waits).
type Envelope struct {
	Cmd  Command
	call *call
	// link is the requesting span, when tracing is on: the batch that
	// applies the command links to it.
	link trace.Link
}

// CmdCreateAccount opens an account.
type CmdCreateAccount struct{ Spec ledger.AccountSpec }

// CmdTransfer makes a transfer debiting an account of the shard. Attached
// records are written in the same storage batch as the transfer when the
// command makes it anew, and never otherwise: another component's records
// that must be durable exactly when the transfer is (the wallet's chat
// message of a transfer).
type CmdTransfer struct {
	Req      ledger.TransferRequest
	Attached []store.Record
}

// CmdBatch makes many transfers debiting accounts of the shard; with Atomic,
// all or none.
type CmdBatch struct {
	Reqs   []ledger.TransferRequest
	Atomic bool
}

// CmdPost posts a pending transfer (Amount 0: all of it).
type CmdPost struct {
	ID     string
	Amount int64
}

// CmdVoid voids a pending transfer.
type CmdVoid struct{ ID string }

// CmdExpire releases holds whose deadline has passed.
type CmdExpire struct{}

// CmdReserve decides a new reservation in an area of the shard. Nobody
// waits on its call: readers wait on the reservation index instead.
type CmdReserve struct{ Res *tickets.Reservation }

// CmdPayReservation marks a reservation of the shard paid by a payment,
// the pending ledger transfer PaymentID.
type CmdPayReservation struct{ ID, PaymentID string }

// CmdCancelReservation gives a reservation's seats back.
type CmdCancelReservation struct{ ID string }

// CmdInspectArea reads an area's seat map and holders, as of the batch.
type CmdInspectArea struct{ EventID, AreaID string }

func (CmdCreateAccount) command()     {}
func (CmdTransfer) command()          {}
func (CmdBatch) command()             {}
func (CmdPost) command()              {}
func (CmdVoid) command()              {}
func (CmdExpire) command()            {}
func (CmdReserve) command()           {}
func (CmdPayReservation) command()    {}
func (CmdCancelReservation) command() {}
func (CmdInspectArea) command()       {}

// call is a client waiting for a command's outcome. It completes when the
// round that applied the command is durable and published.
type call struct {
	done chan struct{}

	account  ledger.Account
	transfer ledger.Transfer
	flag     bool // created or replayed
	batch    []ledger.BatchResult
	err      error

	reservation tickets.Reservation
	area        AreaSeats
}

func newCall() *call { return &call{done: make(chan struct{})} }

func (c *call) complete() { close(c.done) }
