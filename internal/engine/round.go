package engine

import (
	"errors"
	"time"

	"github.com/surge-dev/surge/internal/store"
)

// One goroutine (run) runs the rounds that the package doc describes.
//
// Both legs of a transfer between shards are in the same storage batch, so
// no credit is ever in flight, durably or to readers, and a transfer
// between shards costs what one within a shard does: one round, one fsync.
// Were each shard to commit on its own, a credit would wait for the
// receiver's next batch and fsync, and two shards committing out of step
// would share fewer fsyncs, each waiting for the other's to end.

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
	exclusives := e.exclusive.Read(e.cfg.MaxBatch)
	par := e.large()
	e.startWrite(par || e.cfg.Commit != nil)
	if len(exclusives) == 0 {
		e.each(e.shards, stepReceiveWrite, now, par)
	} else {
		e.each(e.shards, stepReceive, now, par)
		for i := range exclusives {
			exclusives[i].Cmd.(exclusive)(now)
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
		e.abandonRound(exclusives, err)
		return
	}
	e.publish(now, par)
	for i := range exclusives {
		exclusives[i].call.complete()
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
	// stepReceive has the shard's slices receive what crosses to them.
	stepReceive
	// stepWrite adds the slices' changes to the shard's storage batch.
	stepWrite
	// stepReceiveWrite is stepReceive then stepWrite, for a round with no
	// exclusive command to run between them.
	stepReceiveWrite
	// stepPublish and stepAnnounce are the two halves of publishing a
	// durable round.
	stepPublish
	stepAnnounce
)

// large reports whether the round's later steps are worth running in
// parallel.
func (e *Engine) large() bool {
	if len(e.shards) == 1 {
		return false
	}
	n := 0
	for _, s := range e.shards {
		n += s.size()
	}
	return n >= e.cfg.ParallelSize
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
		b := e.db.NewBatch()
		for _, s := range e.shards {
			s.wb = b
		}
		return
	}
	for _, s := range e.shards {
		s.wb = e.db.NewBatch()
	}
}

// commitRound gathers the shards' storage batches into one and makes it
// durable with one fsync: what a round changed in several shards (both
// legs of a transfer between shards) must reach the disk together or not
// at all, and two batches could be torn apart by a crash between their
// WAL records.
func (e *Engine) commitRound() error {
	if e.cfg.Commit != nil {
		return e.commitElsewhere()
	}
	b := e.shards[0].wb
	var err error
	for _, s := range e.shards[1:] {
		if s.wb != b {
			if err == nil {
				err = b.Apply(s.wb, nil)
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
		_ = b.Close()
		return err
	}
	return e.db.Commit(b)
}

// abandonRound answers every call of a round that did not reach the disk
// with the error, and publishes nothing of it. The slices are now ahead of
// the disk and cannot be rolled back in general, so the engine commits
// nothing more (refusal): later rounds would build on changes that no
// reader or restart sees. Reads go on from what was published and the
// store's committed state; writes resume from the disk's state when the
// process restarts (cli's resume watcher restarts it in place).
func (e *Engine) abandonRound(exclusives []Envelope, err error) {
	if e.broken.CompareAndSwap(nil, &err) {
		e.cfg.Logger.Error("storage refused a round's commit: writes are refused, reads are served from committed state", "err", err)
	}
	refused := e.refusal()
	for i := range exclusives {
		exclusives[i].call.fail(refused)
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

// refusal is the error writes get once a round failed to commit (a
// *store.Fault), else nil.
func (e *Engine) refusal() error {
	p := e.broken.Load()
	if p == nil {
		return nil
	}
	var f *store.Fault
	if errors.As(*p, &f) {
		return f
	}
	return &store.Fault{Kind: store.ErrUnavailable, Cause: *p}
}
