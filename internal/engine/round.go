package engine

import (
	"fmt"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
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
// Both legs of a transfer between shards are in the same storage batch, so
// no credit is ever in flight, durably or to readers, and a transfer
// between shards costs what one within a shard does: one round, one fsync.
// When each shard committed on its own, the credit waited for the
// receiver's next batch and fsync, behind an outbox record; and two shards
// committing out of step shared fewer fsyncs, each waiting for the other's
// to end (docs/BENCHMARKS.md, session 16).

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
			close(s.start)
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
	for _, s := range busy {
		s.start <- now
	}
	for range busy {
		<-e.applied
	}
	e.applyCredits()
	exclusive := e.exclusive.Read(e.cfg.MaxBatch)
	for i := range exclusive {
		exclusive[i].Cmd.(cmdExclusive).run(exclusive[i].call, now)
	}
	for _, s := range busy {
		s.trace.startCommit()
	}
	err := e.persist(e.shards...)
	for _, s := range busy {
		s.trace.endCommit()
	}
	if err != nil {
		// The Books are ahead of the disk and cannot be rolled back in
		// general; carrying on would acknowledge lost writes. Recovery on
		// restart rebuilds the state from what did reach the disk.
		panic(fmt.Sprintf("engine: round commit failed: %v", err))
	}
	e.publish(e.shards...)
	for i := range exclusive {
		exclusive[i].call.complete()
	}
	for _, s := range e.shards {
		s.finish()
	}
}

// applyCredits applies the credits the shards' debits owe accounts of
// other shards. Every shard is parked, so the receivers' Books are free.
func (e *Engine) applyCredits() {
	for _, s := range e.shards {
		for _, leg := range s.book.Changes().Credits {
			e.shardFor(leg.To).book.ApplyCredit(leg)
		}
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
