package changelog

import (
	"context"
	"fmt"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/store"
)

// In rounds without a transaction ("Rounds without a transaction",
// docs/CLUSTER.md) a partition's copy keeps, beside its offset, where a
// replay through the changelog's Chain stands there (kafkalog.ChainState:
// the epoch in force and the last trailer that counts), in the meta the
// same local batch moves: the tail read from that offset may hold no
// trailer, nor the epoch record its changes are judged by. A take
// restores the partition from it (kafkalog.Owner.Take, through
// kafkalog.ChainMember's handlers: RestoreChain), and each round's writes
// that count move it on (CommitChain).
//
// A copy without a chain state is a copy kept by transactional rounds (an
// upgrade). It is restored from the changelog's start: the replay state at its offset
// would be NoEpoch and no trailer only if no epoch record lies below that
// offset, which the copy cannot show (a copy brought up to date by a
// transactional restore reads every record, epoch records and a zombie's
// changes alike, as changes).

// ChainFrom is where partition p's copy stands for a take: its chain state
// at its offset, or the changelog's start if the copy is missing, has no
// chain state, or is doubtful (kafkalog.CheckSnapshot).
func (s *Snapshots) ChainFrom(ctx context.Context, p int32) (kafkalog.ChainState, error) {
	m, ok, err := s.meta(p)
	if err != nil || !ok || m.Chain == nil {
		return kafkalog.LogStart(), err
	}
	doubt, err := kafkalog.CheckSnapshot(ctx, s.cfg, p, m)
	if err != nil {
		return kafkalog.LogStart(), err
	}
	if doubt != "" {
		s.logger.Warn("cluster: reading a partition's whole changelog", "partition", p, "doubt", doubt)
		return kafkalog.LogStart(), nil
	}
	return *m.Chain, nil
}

// ChainRestore is a take's restore of one partition into the copy.
type ChainRestore struct {
	s *Snapshots
	p int32
	w *restoreWriter
}

// RestoreChain begins the restore of partition p into its copy for a
// take: it returns where the take reads the changelog from (ChainFrom)
// and the restore, which has dropped the copy if the take reads from the
// start. The take gives the restore's Apply each change that counts; Done
// then records what the copy covers. The engine's cache, which the
// node's running rounds write, is left alone: the node loads the
// partitions it writes from their copies (Load) once their takes ended.
// Until Done or Close, Restate reads the restore's changes too.
func (s *Snapshots) RestoreChain(ctx context.Context, p int32) (kafkalog.ChainState, *ChainRestore, error) {
	from, err := s.ChainFrom(ctx, p)
	if err != nil {
		return from, nil, err
	}
	r := &ChainRestore{s: s, p: p, w: &restoreWriter{snap: s, sb: s.db.NewBatch(), prefix: snapKey(snapData, p, nil)}}
	if from.Offset == 0 {
		if err := r.w.drop(p); err != nil {
			r.w.close()
			return from, nil, err
		}
	}
	s.mu.Lock()
	s.restoring[p] = r
	s.mu.Unlock()
	return from, r, nil
}

// Apply writes a change that counts into the copy.
func (r *ChainRestore) Apply(key, value []byte) error {
	r.s.read.Add(1)
	return r.w.add(key, value)
}

// Done ends the restore of the take t: the copy covers the changelog up
// to st, the owner's state after its first write (kafkalog.Owner.State),
// which its restore and that write's repairs (the current values the
// copy holds) brought it to.
func (r *ChainRestore) Done(t kafkalog.Taken, st kafkalog.ChainState) error {
	defer r.end()
	m := t.Restored.Snapshot
	m.Offset, m.Chain = st.Offset, &st
	if err := setMeta(r.w.sb, r.p, m); err != nil {
		return err
	}
	return r.w.flush()
}

// Close drops what the restore has not written; a restore cut short
// leaves a copy whose meta is the one before it, or none.
func (r *ChainRestore) Close() { r.end() }

// end closes the restore's batch and stops Restate reading it.
func (r *ChainRestore) end() {
	r.s.mu.Lock()
	if r.s.restoring[r.p] == r {
		delete(r.s.restoring, r.p)
	}
	r.s.mu.Unlock()
	r.w.close()
}

// Load writes the copies of partitions into cache, a fresh store: the
// engine's cache of the partitions a node writes, whose copies are
// current (each take's restore and each counted round moved them).
func (s *Snapshots) Load(cache *store.Store, partitions []int32) error {
	for _, p := range partitions {
		w := &restoreWriter{cache: cache, snap: s, cb: cache.NewBatch(), sb: s.db.NewBatch(), prefix: snapKey(snapData, p, nil)}
		err := w.copy()
		if err == nil {
			err = w.flush()
		}
		w.close()
		if err != nil {
			return fmt.Errorf("changelog: loading partition %d: %w", p, err)
		}
	}
	return nil
}

// Restate is kafkalog.Restate over the copies: the updates that write a
// changelog key of partition p again as the copy holds it. The copy is
// the state before the changes of the round being written (it takes them
// once the write counts), which is what a repair, written before them in
// the round's batch, must restate. A range delete's key restates the
// range delete, then each key its range holds in the copy. A take's
// restore of p under way is written to the copy first: its first write's
// repairs restate what it read.
func (s *Snapshots) Restate(p int32, key []byte) ([]kafkalog.Update, error) {
	s.mu.Lock()
	r := s.restoring[p]
	s.mu.Unlock()
	if r != nil {
		if err := r.w.flush(); err != nil {
			return nil, err
		}
	} else if err := s.flush(); err != nil {
		return nil, err
	}
	prefix := snapKey(snapData, p, nil)
	start, end, isRange, err := rangeOf(key)
	if err != nil {
		return nil, err
	}
	if !isRange {
		v, ok, err := s.db.Get(snapKey(snapData, p, key))
		if err != nil || !ok {
			return []kafkalog.Update{{Key: key}}, err
		}
		return []kafkalog.Update{{Key: key, Value: append([]byte{opSet}, v...)}}, nil
	}
	ups := []kafkalog.Update{{Key: key, Value: []byte{opRange}}}
	err = s.db.Scan(snapKey(snapData, p, start), snapKey(snapData, p, end), false, func(k, v []byte) (bool, error) {
		k = append([]byte(nil), k[len(prefix):]...)
		ups = append(ups, kafkalog.Update{Key: k, Value: append([]byte{opSet}, v...)})
		return true, nil
	})
	return ups, err
}

// CommitChain adds a round's changes of the partitions whose writes
// counted to their copies, with each one's state after the round (states:
// kafkalog.Owner.State), in one local batch. Changes of other partitions
// (fenced, or of unknown outcome) are left out.
func (s *Snapshots) CommitChain(outs []kafkalog.Output, states map[int32]kafkalog.ChainState) error {
	to := make(map[int32]position, len(states))
	for p, st := range states {
		to[p] = position{offset: st.Offset, chain: &st}
	}
	counted := make([]kafkalog.Output, 0, len(outs))
	for _, o := range outs {
		if _, ok := to[o.Partition]; ok && o.Kind == kafkalog.Change {
			counted = append(counted, o)
		}
	}
	return s.commit(counted, to)
}
