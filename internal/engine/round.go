package engine

import (
	"errors"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
)

// The engine works in rounds, driven by one goroutine (run). A round:
//
//  1. every shard with commands waiting applies them, up to MaxBatch, to
//     its own Book and Desk, all shards in parallel;
//  2. with every shard parked, the credits those debits owe accounts of
//     other shards are applied to the receivers' Books, and then the
//     commands that need every Book at once (atomic batches spanning
//     shards) run;
//  3. everything the round changed, in every shard, is written as one
//     storage batch and made durable with one fsync;
//  4. it is published to readers, and every call of the round answered.
//
// Steps 2 to 4, but for the commands that need every Book, are each
// shard's own work on its own state, done by the shards' goroutines when
// the round is large (each step below).
//
// Both legs of a transfer between shards are in the same storage batch, so
// no credit is ever in flight, durably or to readers, and a transfer
// between shards costs what one within a shard does: one round, one fsync.
// When each shard committed on its own, the credit waited for the
// receiver's next batch and fsync, behind an outbox record; and two shards
// committing out of step shared fewer fsyncs, each waiting for the other's
// to end (docs/BENCHMARKS.md, sessions 16 and 17).

// cmdExclusive runs in a round with every shard's Book and Desk at hand,
// after the shards have applied their commands: an atomic batch whose
// debits span shards. In-process only, since it carries a function.
type cmdExclusive struct{ run func(c *call, now time.Time) }

func (cmdExclusive) command() {}

// run runs rounds until the engine closes and every log is drained.
func (e *Engine) run() {
	defer e.wg.Done()
	defer func() {
		for _, s := range e.shards {
			close(s.work)
		}
	}()
	busy := make([]*shard, 0, len(e.shards))
	for {
		// Read before looking at the logs: once it is set, every log
		// refuses appends, so logs found empty stay empty.
		draining := e.draining.Load()
		busy = busy[:0]
		for _, s := range e.shards {
			if s.log.Len() > 0 {
				busy = append(busy, s)
			}
		}
		if len(busy) == 0 && e.exclusive.Len() == 0 {
			if draining {
				return
			}
			<-e.ready
			continue
		}
		e.round(busy)
	}
}

// round runs one round in which the busy shards apply their logs.
func (e *Engine) round(busy []*shard) {
	now := time.Now().UTC()
	e.each(busy, stepApply, now, true)
	exclusive := e.exclusive.Read(e.cfg.MaxBatch)
	par := e.large()
	e.startWrite(par)
	if len(exclusive) == 0 {
		e.each(e.shards, stepCreditWrite, now, par)
	} else {
		e.each(e.shards, stepCredit, now, par)
		for i := range exclusive {
			exclusive[i].Cmd.(cmdExclusive).run(exclusive[i].call, now)
		}
		e.each(e.shards, stepWrite, now, par)
	}
	for _, s := range busy {
		s.trace.startCommit()
	}
	err := e.commitRound()
	for _, s := range busy {
		s.trace.endCommit()
	}
	if err != nil {
		e.abandonRound(exclusive, err)
		return
	}
	e.publish(now, par)
	for i := range exclusive {
		exclusive[i].call.complete()
	}
	for _, s := range e.shards {
		s.finish()
	}
}

// step is a part of a round that each shard does for itself, with no
// other shard's state changing meanwhile.
type step uint8

const (
	// stepApply applies the commands waiting in the shard's log.
	stepApply step = iota
	// stepCredit applies the credits that other shards' debits owe the
	// shard's accounts.
	stepCredit
	// stepWrite adds the shard's changes to its storage batch.
	stepWrite
	// stepCreditWrite is stepCredit then stepWrite, for a round with no
	// exclusive command to run between them.
	stepCreditWrite
	// stepShowAccounts puts the shard's changed accounts in the committed
	// view, and stepReleaseIDs its new transfer ids in the id filter and
	// out of flight: the two halves of publishing a durable round.
	stepShowAccounts
	stepReleaseIDs
)

// defaultParallelEntries is the size of a round, in history entries and credits,
// from which the steps after applying run on the shards' goroutines rather
// than one after another on the round's. Handing a step to a shard and
// back costs two goroutine wake-ups, a few microseconds; a transfer's
// credit, record and publishing cost about a microsecond. On the batch
// route, rounds of tens of thousands of transfers ran those steps on one
// CPU while the other idled (pprof, docs/BENCHMARKS.md, session 17).
const defaultParallelEntries = 1024

// large reports whether the round's later steps are worth running in
// parallel.
func (e *Engine) large() bool {
	n := 0
	for _, s := range e.shards {
		ch := s.book.Changes()
		n += ch.JournalEntries + len(ch.Credits)
	}
	return n >= e.cfg.parallelEntries && len(e.shards) > 1
}

// each has every one of shards do st: each on its own goroutine, all at
// once, if parallel; otherwise one after another on the caller's.
func (e *Engine) each(shards []*shard, st step, now time.Time, parallel bool) {
	if !parallel || len(shards) == 1 {
		for _, s := range shards {
			s.do(st, now)
		}
		return
	}
	for _, s := range shards {
		s.work <- stepWork{step: st, now: now}
	}
	for range shards {
		<-e.stepDone
	}
}

// startWrite gives every shard the storage batch its stepWrite adds to:
// a batch of its own if they write in parallel, otherwise one they share.
func (e *Engine) startWrite(parallel bool) {
	if !parallel {
		w := store.NewLedgerBatch(e.db.NewBatch())
		for _, s := range e.shards {
			s.wb = w
		}
		return
	}
	for _, s := range e.shards {
		s.wb = store.NewLedgerBatch(e.db.NewBatch())
	}
}

// commitRound gathers the shards' storage batches into one and makes it
// durable with one fsync: both legs of a transfer between shards must
// reach the disk together or not at all, and two batches could be torn
// apart by a crash between their WAL records.
func (e *Engine) commitRound() error {
	w := e.shards[0].wb
	var err error
	for _, s := range e.shards[1:] {
		if s.wb != w {
			if err == nil {
				err = w.Apply(s.wb.Batch, nil)
			}
			_ = s.wb.Close()
		}
	}
	for _, s := range e.shards {
		s.wb = nil
	}
	if err == nil {
		err = e.refusal()
	}
	if err != nil {
		_ = w.Close()
		return err
	}
	return e.db.Commit(w.Batch)
}

// abandonRound answers every call of a round that did not reach the disk
// with the error, and publishes nothing of it. The shards' Books are now
// ahead of the disk and cannot be rolled back in general, so the engine
// commits nothing more (refusal): later rounds would build on changes that
// no reader or restart sees. Reads go on from the committed view and the
// store's committed state; writes resume from the disk's state when the
// process restarts (the store's fault says when, see cli's resume watcher).
func (e *Engine) abandonRound(exclusive []Envelope, err error) {
	if e.broken.CompareAndSwap(nil, &err) {
		e.cfg.Logger.Error("storage refused a round's commit: writes are refused, reads are served from committed state", "err", err)
	}
	refused := e.refusal()
	for i := range exclusive {
		exclusive[i].call.err = refused
		exclusive[i].call.complete()
	}
	for _, s := range e.shards {
		for i := range s.envs {
			if c := s.envs[i].call; c != nil {
				c.err = refused
			}
		}
		s.finish()
	}
}

// refusal is the error writes get once a round failed to commit, else nil.
func (e *Engine) refusal() error {
	p := e.broken.Load()
	if p == nil {
		return nil
	}
	if errors.Is(*p, store.ErrFull) {
		return ledger.Errorf(ledger.CodeStorageFull, "storage full: writes are refused until space is freed and surge restarts (it does so by itself); reads are served")
	}
	return ledger.Errorf(ledger.CodeStorageUnavailable, "storage unavailable: writes are refused; reads are served (%v)", *p)
}

// applyCredits applies the credits that the round's debits owe the
// shard's accounts: the shards are parked, so their Changes hold still.
// The order, by debiting shard and then by debit, is the same whichever
// goroutine runs it.
func (s *shard) applyCredits() {
	for _, from := range s.eng.shards {
		credits := from.book.Changes().Credits
		for _, i := range from.outgoing[s.id] {
			s.book.ApplyCredit(credits[i])
		}
	}
}

// routeCredits sorts the shard's credits of the round by receiving shard,
// once, so that every receiver finds its own without hashing them all.
func (s *shard) routeCredits() {
	for i, leg := range s.book.Changes().Credits {
		to := s.eng.shardIndex(leg.To)
		s.outgoing[to] = append(s.outgoing[to], int32(i))
	}
}

// applyAtomicAcross applies an atomic batch whose debits span shards: the
// items in order over all Books, crediting receivers at once so that later
// items see it, and all rolled back if one fails.
func (e *Engine) applyAtomicAcross(reqs []ledger.TransferRequest, now time.Time) []ledger.BatchResult {
	saves := make([]ledger.Savepoint, len(e.shards))
	for i, s := range e.shards {
		saves[i] = s.book.Begin()
	}
	res, failed := e.applyAcross(reqs, now)
	for i, s := range e.shards {
		if failed {
			s.book.Rollback(saves[i])
		} else {
			s.book.Commit()
		}
	}
	return res
}

func (e *Engine) applyAcross(reqs []ledger.TransferRequest, now time.Time) ([]ledger.BatchResult, bool) {
	res := make([]ledger.BatchResult, len(reqs))
	for i, r := range reqs {
		from := e.shardFor(r.From).book
		mark := len(from.Changes().Credits)
		t, replayed, err := from.Transfer(r, now)
		if err != nil {
			return aborted(reqs, i, err), true
		}
		res[i] = ledger.BatchResult{Transfer: t, Replayed: replayed}
		for _, leg := range from.Changes().Credits[mark:] {
			e.shardFor(leg.To).book.ApplyCredit(leg)
		}
	}
	return res, false
}
