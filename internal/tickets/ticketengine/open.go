// Package ticketengine runs ticketing on the engine: each area's seat map
// on the shard its key hashes to, decided there in rounds, and the
// ticketing API over them (CreateEvent, Reserve, Reservation, ...).
// Payments go through the ledger (Ledger).
package ticketengine

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/surge-dev/surge/internal/tickets/ticketstore"
)

// Ledger is what ticketing needs of the ledger: accounts to pay
// organizers, and pending transfers that hold a payment until the
// reservation is marked paid (ledgerengine.Ledger is one).
type Ledger interface {
	Account(ctx context.Context, id string) (ledger.Account, error)
	Transfer(ctx context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error)
	PostPending(ctx context.Context, id string, amount int64) (ledger.Transfer, error)
	VoidPending(ctx context.Context, id string) (ledger.Transfer, error)
	// PendingIDs lists the open holds whose id starts with prefix.
	PendingIDs(prefix string) ([]string, error)
}

// Config sets up ticketing.
type Config struct {
	// OutcomeRetention is how long failed reservations are kept at least
	// for readers, and OutcomeMemoryBytes the memory they may take
	// (estimated); more failures within OutcomeRetention than that holds
	// are forgotten sooner (outcomes.go). 0: the defaults.
	OutcomeRetention   time.Duration
	OutcomeMemoryBytes int64
	// Registerer receives ticketing's metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger receives operational messages; nil means slog.Default().
	Logger *slog.Logger
}

// Open loads every stored event and reservation from eng's storage into
// the shards that own their areas and attaches ticketing to eng, which
// must not have started yet. Start finishes opening once the engine runs.
func Open(eng *engine.Engine, ledger Ledger, cfg Config) (*Tickets, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OutcomeRetention <= 0 {
		cfg.OutcomeRetention = DefaultOutcomeRetention
	}
	if cfg.OutcomeMemoryBytes <= 0 {
		cfg.OutcomeMemoryBytes = DefaultOutcomeMemoryBytes
	}
	t := &Tickets{
		eng: eng, ledger: ledger, db: ticketstore.Store{Store: eng.Store()}, log: cfg.Logger,
		events: make(map[string]*eventState), users: userSeats{m: make(map[userKey]*tickets.SeatClaims)},
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "surge_reservations_total",
			Help: "Reservation decisions and later moves, by resulting state and failure reason.",
		}, []string{"state", "reason"}),
	}
	t.index = newResvIndex(&t.areas, cfg.OutcomeRetention, cfg.OutcomeMemoryBytes)
	slices := make([]engine.Slice, eng.Shards())
	for i := range slices {
		s := &shard{t: t, desk: tickets.NewDesk(t.decided)}
		t.shards = append(t.shards, s)
		slices[i] = s
	}
	if err := t.loadTickets(); err != nil {
		return nil, err
	}
	t.port = eng.Attach(slices)
	// A Tick on the first shard ages the failures; its rounds ask for the
	// next one while any are kept.
	t.index.wake = func() { _ = t.port.Post(0, engine.Tick{}) }
	t.index.disk = t.storedReservation
	t.register(cfg.Registerer)
	return t, nil
}

// Start settles the payments a crash interrupted: a pending payment is
// posted if its reservation is paid, voided otherwise. The engine must be
// running.
func (t *Tickets) Start(ctx context.Context) error {
	pending, err := t.ledger.PendingIDs(paymentPrefix)
	if err != nil {
		return fmt.Errorf("find pending reservation payments: %w", err)
	}
	for _, payment := range pending {
		r, err := t.Reservation(ctx, paymentReservation(payment), 0)
		t.settlePayment(ctx, payment, err == nil && r.State == tickets.Paid && r.PaymentID == payment)
	}
	return nil
}

// shard is ticketing's slice of one engine shard: the Desk of the
// reservations in the areas that hash to it. It is ticketing's
// engine.Slice.
type shard struct {
	t    *Tickets
	desk *tickets.Desk
}

// Apply decides the shard's reservation commands of the round.
func (s *shard) Apply(cmds []engine.Command, now time.Time) {
	for _, c := range cmds {
		switch c := c.(type) {
		case *Reserve:
			a, _ := s.t.area(c.filed.EventID, c.filed.AreaID)
			s.desk.Reserve(&a.event.spec, a.seats, c.filed, now, false)
		case *cmdPay:
			r, err := s.desk.Pay(c.id, c.paymentID, now)
			c.reservation, c.err = copyOf(r), err
		case *Cancel:
			s.cancel(c, now)
		case *Inspect:
			c.Seats = s.inspect(c.Event, c.Area)
		case engine.Tick:
			s.desk.Expire(now)
			if s == s.t.shards[0] {
				s.t.index.expire(now)
			}
		default:
			panic(fmt.Sprintf("ticketengine: unknown command %T", c))
		}
	}
}

// Size is zero: a round's reservations are few next to its transfers.
func (s *shard) Size() int { return 0 }

// Receive does nothing: no reservation crosses shards.
func (s *shard) Receive() {}

// Write adds the round's changed reservations to the storage batch.
func (s *shard) Write(b *pebble.Batch) {
	w := ticketstore.NewTicketBatch(b)
	for _, r := range s.desk.Changes() {
		w.PutReservation(r)
	}
}

// Publish does nothing: reservations are published in Announce, after the
// ledger shows the accounts a payment moved.
func (s *shard) Publish(time.Time) {}

// Announce makes the round's decisions visible and wakes their readers.
func (s *shard) Announce() { s.t.publishReservations(s.desk.Changes()) }

// Finish readies the Desk for the next round and returns its earliest
// hold deadline; the first shard's is also when failures next age.
func (s *shard) Finish() time.Time {
	s.desk.Reset()
	next := s.desk.NextExpiry()
	if s != s.t.shards[0] {
		return next
	}
	if age := s.t.index.nextExpiry(); !age.IsZero() && (next.IsZero() || age.Before(next)) {
		return age
	}
	return next
}

// cancel gives a reservation's seats back, or says why not.
func (s *shard) cancel(c *Cancel, now time.Time) {
	r, err := s.desk.Cancel(c.ID, now)
	if r == nil {
		r, _ = s.t.decided(c.ID)
	}
	if r != nil {
		cp := *r
		c.Reservation = &cp
	}
	if err != nil && r != nil {
		c.Err = tickets.Refusal(r, err)
	}
}

// The shards apply the commands of wire.go that a single process needs
// (Reserve, Cancel, Inspect), and cmdPay, the middle step of its
// two-phase payment (PayReservation); a cluster pays with Pay and PayEnd
// instead (cluster_pay.go), since it has no pending transfer to settle
// on restart.
type cmdPay struct {
	id, paymentID string
	reservation   tickets.Reservation
	err           error
}
