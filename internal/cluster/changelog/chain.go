package changelog

import (
	"context"

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
// A copy without a chain state was kept by transactional rounds. It is
// restored from the changelog's start: the replay state at its offset
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

// ChainRestore is a take's restore of one partition into the engine's
// cache and the copy.
type ChainRestore struct {
	s *Snapshots
	p int32
	w *restoreWriter
}

// RestoreChain begins the restore of partition p into cache for a take:
// it returns where the take reads the changelog from (ChainFrom) and the
// restore, which has copied the copy's state into cache, or dropped the
// copy if the take reads from the start. The take gives the restore's
// Apply each change that counts; Done then records what the copy covers.
func (s *Snapshots) RestoreChain(ctx context.Context, cache *store.Store, p int32) (kafkalog.ChainState, *ChainRestore, error) {
	from, err := s.ChainFrom(ctx, p)
	if err != nil {
		return from, nil, err
	}
	r := &ChainRestore{s: s, p: p, w: &restoreWriter{cache: cache, snap: s.db, cb: cache.NewBatch(), sb: s.db.NewBatch(), prefix: snapKey(snapData, p, nil)}}
	if from.Offset == 0 {
		err = r.w.drop(p)
	} else {
		err = r.w.copy()
	}
	if err != nil {
		r.Close()
		return from, nil, err
	}
	return from, r, nil
}

// Apply writes a change that counts into the cache and the copy.
func (r *ChainRestore) Apply(key, value []byte) error {
	r.s.read.Add(1)
	return r.w.add(key, value)
}

// Done ends the restore of the take t: the copy covers the changelog up
// to st, the owner's state after its first write (kafkalog.Owner.State),
// which its restore and that write's repairs (the current values the
// copy holds) brought it to.
func (r *ChainRestore) Done(t kafkalog.Taken, st kafkalog.ChainState) error {
	m := t.Restored.Snapshot
	m.Offset, m.Chain = st.Offset, &st
	if err := setMeta(r.w.sb, r.p, m); err != nil {
		return err
	}
	return r.w.flush()
}

// Close drops what the restore has not written; a restore cut short
// leaves a copy whose meta is the one before it, or none.
func (r *ChainRestore) Close() { r.w.close() }

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
