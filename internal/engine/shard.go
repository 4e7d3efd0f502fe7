package engine

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerstore"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/tickets"
)

// shard owns a slice of the accounts and of the ticketing areas. In each
// round its goroutine applies the commands waiting in its log to its Book
// and Desk; the rest of the round runs with the shard parked (round.go).
type shard struct {
	id   int
	eng  *Engine
	log  Log
	book *ledger.Book
	desk *tickets.Desk
	// work hands the shard a step of a round to do, with the round's time;
	// the shard reports on eng.stepDone when it is done (round.go).
	work chan stepWork
	// envs are the commands the shard applied in this round.
	envs []Envelope
	// outgoing indexes the round's credits (Changes().Credits) by the
	// shard that owns the receiving account.
	outgoing [][]int32
	// wb is the storage batch the shard writes the round's changes to.
	wb *ledgerstore.LedgerBatch
	// attached are the round's records attached to new transfers.
	attached []store.Record
	trace    batchTrace
	// expiry fires a CmdExpire at expiryAt, the earliest hold deadline.
	expiry   *time.Timer
	expiryAt time.Time
	history  historyWriter
}

func newShard(id int, e *Engine) *shard {
	s := &shard{
		id: id, eng: e, log: newMemLog(e.cfg.QueueCapacity, e.ready),
		work: make(chan stepWork, 1), outgoing: make([][]int32, e.cfg.Shards),
	}
	s.book = ledger.NewBook(s)
	s.desk = tickets.NewDesk()
	return s
}

// stepWork is a step of a round for a shard to do.
type stepWork struct {
	step step
	now  time.Time
}

func (s *shard) run() {
	defer s.eng.wg.Done()
	for w := range s.work {
		s.do(w.step, w.now)
		s.eng.stepDone <- struct{}{}
	}
}

func (s *shard) do(st step, now time.Time) {
	switch st {
	case stepApply:
		s.applyLog(now)
	case stepCredit:
		s.applyCredits()
	case stepWrite:
		s.write()
	case stepCreditWrite:
		s.applyCredits()
		s.write()
	case stepShowAccounts:
		s.showAccounts()
	case stepReleaseIDs:
		s.releaseIDs()
	default:
		panic(fmt.Sprintf("engine: unknown step %d", st))
	}
}

// applyLog applies the commands waiting in the shard's log, up to
// MaxBatch, to its Book and Desk.
func (s *shard) applyLog(now time.Time) {
	s.envs = s.log.Read(s.eng.cfg.MaxBatch)
	s.trace = startBatchTrace(s.id, s.envs)
	for i := range s.envs {
		s.apply(&s.envs[i], now)
	}
	s.routeCredits()
	s.eng.metrics.batchSize.Observe(float64(len(s.envs)))
}

// finish answers the round's calls, once its changes are durable and
// published, and readies the shard for the next round.
func (s *shard) finish() {
	for i := range s.envs {
		if c := s.envs[i].call; c != nil {
			c.complete()
		}
	}
	s.trace.end()
	s.trace, s.envs = batchTrace{}, nil
	s.book.Reset()
	s.desk.Reset()
	for i := range s.outgoing {
		s.outgoing[i] = s.outgoing[i][:0]
	}
	clear(s.attached)
	s.attached = s.attached[:0]
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
	return s.eng.ldb.Transfer(id)
}

func (s *shard) Claim(id string) bool {
	return !s.eng.inflight.loadOrStore(id, s.id)
}

func (s *shard) Release(id string) { deleteIf(s.eng.inflight, id, s.id) }

func (s *shard) Currency(id string) (string, bool) { return s.eng.accounts.currency(id) }

func (s *shard) NewID() string { return uuid.Must(uuid.NewV7()).String() }
