package engine

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
)

// shard owns a slice of the accounts. Its goroutine is the only one that
// touches its Book, and it applies commands a batch at a time: apply all in
// memory, write all effects as one storage batch, one fsync, then answer.
type shard struct {
	id   int
	eng  *Engine
	log  Log
	book *ledger.Book
	desk *tickets.Desk
	// legCalls[k] is the call waiting for Changes().Credits[k], or nil.
	legCalls []*call
	// outgoing are the batch's credits grouped by receiving shard, each
	// group one outbox record and one command; settled are the outbox
	// records of the credits the batch applied.
	outgoing []outbox
	settled  []string
	// attached are the batch's records attached to new transfers.
	attached []store.Record
	// expiry fires a CmdExpire at expiryAt, the earliest hold deadline.
	expiry   *time.Timer
	expiryAt time.Time
	history  historyWriter
}

func newShard(id int, e *Engine) *shard {
	s := &shard{id: id, eng: e, log: newMemLog(e.cfg.QueueCapacity)}
	s.book = ledger.NewBook(s)
	s.desk = tickets.NewDesk()
	return s
}

func (s *shard) run() {
	defer s.eng.wg.Done()
	for {
		envs := s.log.Read(s.eng.cfg.MaxBatch)
		if envs == nil {
			return
		}
		s.process(envs)
	}
}

// process applies envs as one or more durable batches: a barrier splits
// them, since everything before it must be durable before the shard parks.
func (s *shard) process(envs []Envelope) {
	start := 0
	for i := range envs {
		if b, ok := envs[i].Cmd.(cmdBarrier); ok {
			s.commitBatch(envs[start:i])
			b.parked <- struct{}{}
			<-b.release
			// The coordinator may have opened holds in this shard's Book.
			s.scheduleExpiry()
			start = i + 1
		}
	}
	s.commitBatch(envs[start:])
}

func (s *shard) commitBatch(envs []Envelope) {
	if len(envs) == 0 {
		return
	}
	now := time.Now().UTC()
	tr := startBatchTrace(s.id, envs)
	defer tr.end()
	for i := range envs {
		from := len(s.book.Changes().Credits)
		s.apply(&envs[i], now)
		for range len(s.book.Changes().Credits) - from {
			s.legCalls = append(s.legCalls, envs[i].call)
		}
	}
	s.groupCredits()
	s.eng.metrics.batchSize.Observe(float64(len(envs)))
	tr.startCommit()
	err := s.eng.persist(s)
	tr.endCommit()
	if err != nil {
		// The Book is ahead of the disk and cannot be rolled back in
		// general; carrying on would acknowledge lost writes. Recovery on
		// restart rebuilds the state from what did reach the disk.
		panic(fmt.Sprintf("engine: shard %d: commit failed: %v", s.id, err))
	}
	s.eng.publish(s)
	s.dispatch(envs)
	s.book.Reset()
	s.desk.Reset()
	clear(s.legCalls)
	clear(s.attached)
	s.legCalls, s.outgoing, s.settled, s.attached = s.legCalls[:0], s.outgoing[:0], s.settled[:0], s.attached[:0]
	s.scheduleExpiry()
}

func (s *shard) apply(env *Envelope, now time.Time) {
	c := env.call
	switch cmd := env.Cmd.(type) {
	case CmdCreateAccount:
		c.account, c.flag, c.err = s.book.CreateAccount(cmd.Spec, now)
	case CmdTransfer:
		c.transfer, c.flag, c.err = s.book.Transfer(cmd.Req, now)
		if c.err == nil && !c.flag {
			s.attached = append(s.attached, cmd.Attached...)
		}
	case CmdBatch:
		c.batch = s.applyBatch(cmd, now)
	case CmdPost:
		c.transfer, c.err = s.book.Post(cmd.ID, cmd.Amount, now)
	case CmdVoid:
		c.transfer, c.err = s.book.Void(cmd.ID, now)
	case CmdCredits:
		for _, leg := range cmd.Legs {
			s.book.ApplyCredit(leg)
		}
		s.settled = append(s.settled, cmd.OutboxID)
	case CmdExpire:
		s.expiryAt = time.Time{}
		s.book.Expire(now)
		s.desk.Expire(now)
	case CmdReserve:
		a, _ := s.eng.tk.area(cmd.Res.EventID, cmd.Res.AreaID)
		s.desk.Reserve(&a.event.spec, a.seats, cmd.Res, now)
	case CmdPayReservation:
		r, err := s.desk.Pay(cmd.ID, cmd.PaymentID, now)
		c.reservation, c.err = copyOf(r), err
	case CmdCancelReservation:
		r, err := s.desk.Cancel(cmd.ID, now)
		c.reservation, c.err = copyOf(r), err
	case CmdInspectArea:
		c.area = s.inspect(cmd)
	default:
		panic(fmt.Sprintf("engine: unknown command %T", cmd))
	}
}

func (s *shard) applyBatch(cmd CmdBatch, now time.Time) []ledger.BatchResult {
	res := make([]ledger.BatchResult, len(cmd.Reqs))
	if !cmd.Atomic {
		for i, r := range cmd.Reqs {
			res[i].Transfer, res[i].Replayed, res[i].Err = s.book.Transfer(r, now)
		}
		return res
	}
	sp := s.book.Begin()
	for i, r := range cmd.Reqs {
		t, replayed, err := s.book.Transfer(r, now)
		if err != nil {
			s.book.Rollback(sp)
			return aborted(cmd.Reqs, i, err)
		}
		res[i] = ledger.BatchResult{Transfer: t, Replayed: replayed}
	}
	s.book.Commit()
	return res
}

// aborted is the outcome of an atomic batch whose item failed failed.
func aborted(reqs []ledger.TransferRequest, failed int, err error) []ledger.BatchResult {
	res := make([]ledger.BatchResult, len(reqs))
	for i, r := range reqs {
		res[i].Transfer.ID = r.ID
		res[i].Err = ledger.Errorf(ledger.CodeBatchAborted, "not applied: item %d failed", failed)
	}
	res[failed].Err = err
	return res
}

// outbox is the credits one batch sends to one shard.
type outbox struct {
	id    string
	to    *shard
	legs  []ledger.CreditLeg
	calls []*call // parallel to legs
}

// groupCredits sorts the batch's credits into one outbox per receiving
// shard: one record and one command each, however many transfers.
func (s *shard) groupCredits() {
	for k, leg := range s.book.Changes().Credits {
		to := s.eng.shardFor(leg.To)
		g := len(s.outgoing) - 1
		for g >= 0 && s.outgoing[g].to != to {
			g--
		}
		if g < 0 {
			s.outgoing = append(s.outgoing, outbox{id: uuid.Must(uuid.NewV7()).String(), to: to})
			g = len(s.outgoing) - 1
		}
		s.outgoing[g].legs = append(s.outgoing[g].legs, leg)
		s.outgoing[g].calls = append(s.outgoing[g].calls, s.legCalls[k])
	}
}

// dispatch sends the batch's credits, now that their debits are durable,
// and completes this shard's part of every call in the batch.
func (s *shard) dispatch(envs []Envelope) {
	for _, g := range s.outgoing {
		for _, c := range g.calls {
			if c != nil {
				c.legs.Add(1)
			}
		}
	}
	for _, g := range s.outgoing {
		err := g.to.log.Append(Envelope{Cmd: CmdCredits{OutboxID: g.id, Legs: g.legs}, legCalls: g.calls}, true)
		if err != nil {
			// Shutting down: the outbox record is durable and recovery
			// applies the credits on the next start.
			completeAll(g.calls)
		}
	}
	for i := range envs {
		if c := envs[i].call; c != nil {
			c.legDone()
		}
		completeAll(envs[i].legCalls)
	}
}

func completeAll(calls []*call) {
	for _, c := range calls {
		if c != nil {
			c.legDone()
		}
	}
}

// scheduleExpiry arms the timer for the earliest open hold, of money or
// of seats.
func (s *shard) scheduleExpiry() {
	next := s.book.NextExpiry()
	if seats := s.desk.NextExpiry(); !seats.IsZero() && (next.IsZero() || seats.Before(next)) {
		next = seats
	}
	if next.IsZero() || next.Equal(s.expiryAt) {
		return
	}
	s.expiryAt = next
	d := time.Until(next)
	if s.expiry == nil {
		s.expiry = time.AfterFunc(d, s.fireExpiry)
		return
	}
	s.expiry.Reset(d)
}

func (s *shard) fireExpiry() { _ = s.log.Append(Envelope{Cmd: CmdExpire{}}, true) }

// The shard is its Book's ledger.Lookup.

func (s *shard) Transfer(id string) (ledger.Transfer, bool, error) {
	if !s.eng.ids.mayContain(id) {
		return ledger.Transfer{}, false, nil
	}
	return s.eng.db.Transfer(id)
}

func (s *shard) Claim(id string) bool {
	return !s.eng.inflight.loadOrStore(id, s.id)
}

func (s *shard) Release(id string) { deleteIf(s.eng.inflight, id, s.id) }

func (s *shard) Currency(id string) (string, bool) {
	a, ok := s.eng.account(id)
	return a.Currency, ok
}

func (s *shard) NewID() string { return uuid.Must(uuid.NewV7()).String() }
