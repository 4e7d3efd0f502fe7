package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ChainMember is a node's member of the cluster's consumer group, for
// rounds without a transaction ("Rounds without a transaction",
// docs/CLUSTER.md). The group only assigns the commands partitions
// (cooperative-sticky): the member has no transactional producer and
// commits no offsets. Its rounds are writes through an Owner, whose
// epochs fence them and whose trailers hold the position in each commands
// partition.
//
// On each partition the group assigns it, the member takes the partition
// (Owner.Take, from where the node's local copy stands: ChainHandlers)
// before reading any of its commands, then reads them from the position
// the partition's last trailer that counts says (Owner.Commands), or, when
// no trailer ever counted (a changelog of transactional rounds), from the
// group's committed offset, or the partition's start. On a revoke or a
// loss it drops the partition (Owner.Drop) and tells the node.
//
// franz-go's plain group consumer calls the revoke callback with every
// partition a cooperative rebalance takes away, and the lost callback on
// every session that ends on an error (its GroupTransactSession, which
// the member does not use, would drop the revokes that come between two
// transactions), so the callbacks alone follow every move.
type ChainMember struct {
	cfg Config
	o   *Owner
	f   *Forwarder
	h   ChainHandlers
	g   poller

	// own serialises the member's calls of the Owner: takes and drops
	// from the group's callbacks, writes from the rounds. A revoke thus
	// waits for a write under way, which lands before the partition's
	// next owner claims it.
	own sync.Mutex

	mu sync.Mutex
	// assigned are the partitions the group assigns the member.
	assigned map[int32]bool
	// taken are the assigned partitions the member writes, each with the
	// number of its take (takes counts them): a round writes a partition
	// only under the take its commands were read under.
	taken map[int32]uint64
	takes uint64
	// retake are the assigned partitions to take again before the next
	// round: their take failed, or a write's outcome is unknown.
	retake map[int32]bool
}

// ChainHandlers tell a ChainMember's node about its partitions. They run on
// the group's goroutines (Restore, Taken and TakeFailed also on the rounds' when a
// partition is taken again), never concurrently with each other nor with
// a round's write; they may call Owned and Takes.
type ChainHandlers struct {
	// Restore says where the node's copy of partition stands (LogStart()
	// for none) and returns the function the take gives each change that
	// counts after it, in order, to bring the node's state of the
	// partition up to date.
	Restore func(ctx context.Context, partition int32) (from ChainState, apply func(key, value []byte) error, err error)
	// Taken is told what the take of partition did, once its first write
	// counted: the copy keeps Restored.Snapshot and the Owner's State.
	Taken func(ctx context.Context, partition int32, t Taken)
	// TakeFailed is told of a take of partition that did not take it
	// (err says why), after Restore gave the take its apply: the node
	// drops what the take restored of the partition. It may follow Taken
	// when the member cannot then read the partition's commands from its
	// position. A partition whose claim is stale (ErrStaleClaim) is not
	// taken again until the group assigns it anew; any other is taken
	// again before the next round.
	TakeFailed func(ctx context.Context, partition int32, err error)
	// Revoked is told of partitions the group took from the member
	// (revoked in a rebalance, lost, or left when the member closes): the
	// node drops their state. It may be told of a partition it was not
	// told was taken.
	Revoked func(ctx context.Context, partitions []int32)
}

// takeTime bounds a take in the group's assignment callback, which holds
// the group's rebalance: a take that fails is tried again by the rounds.
const takeTime = 30 * time.Second

// JoinChain makes a ChainMember of the cluster's consumer group, writing
// its rounds through o and driving the forwards of the partitions it
// writes through f (both required). f's Send is called from the rounds
// and from the group's callbacks while the member's calls of o are
// serialised: it must not wait for the member. The caller ticks f
// (Forwarder.Tick). opts are added last.
func JoinChain(c Config, o *Owner, f *Forwarder, h ChainHandlers, opts ...kgo.Opt) (*ChainMember, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	if o == nil || f == nil {
		return nil, errors.New("kafkalog: a chain member needs an Owner and a Forwarder")
	}
	m := &ChainMember{cfg: c, o: o, f: f, h: h, assigned: map[int32]bool{}, taken: map[int32]uint64{}, retake: map[int32]bool{}}
	base := append(c.SeedsFor("member"), consuming(c)...)
	base = append(base,
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(m.onAssigned),
		kgo.OnPartitionsRevoked(m.onRevoked),
		kgo.OnPartitionsLost(m.onRevoked),
		kgo.AdjustFetchOffsetsFn(m.positions),
		m.g.fetchWakes(),
	)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: joining %s: %w", c.Group(), err)
	}
	m.g.cl = cl
	return m, nil
}

// Owned returns the commands partitions the member writes, in order.
func (m *ChainMember) Owned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.taken))
}

// Takes reports whether the member's rounds may take a local command for
// partition p: the member writes p.
func (m *ChainMember) Takes(p int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.taken[p] > 0
}

// Close leaves the group, dropping every partition (ChainHandlers.Revoked).
func (m *ChainMember) Close() { m.g.cl.Close() }

// onAssigned takes each partition the group assigns the member. One whose
// take fails is not read until a round takes it again. The group's
// callbacks use the client they are given: the first may run before
// JoinChain has the client to keep.
func (m *ChainMember) onAssigned(ctx context.Context, cl *kgo.Client, parts map[string][]int32) {
	ps := slices.Sorted(slices.Values(parts[m.cfg.CommandsTopic()]))
	m.mu.Lock()
	for _, p := range ps {
		m.assigned[p] = true
	}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, takeTime)
	defer cancel()
	for _, p := range ps {
		if ok, _ := m.take(ctx, cl, p, false); ok {
			resume(cl, m.cfg.CommandsTopic(), p) // paused when the member held it before
		} else {
			pause(cl, m.cfg.CommandsTopic(), p)
		}
	}
}

// positions is the group consumer's adjustment of the offsets it fetched
// for the partitions assigned: each taken partition is read from its
// trailer's position. A partition no trailer counts in keeps the group's
// committed offset (or the start, for none), which franz-go fetched with
// RequireStable, after any transaction committing one ended: the offsets
// of a cluster whose rounds were transactions (the upgrade).
func (m *ChainMember) positions(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	for p := range offsets[m.cfg.CommandsTopic()] {
		if at, ok := m.o.Commands(p); ok && at >= 0 {
			offsets[m.cfg.CommandsTopic()][p] = kgo.NewOffset().At(at)
		}
	}
	return offsets, nil
}

// onRevoked drops the partitions the group took from the member.
func (m *ChainMember) onRevoked(ctx context.Context, _ *kgo.Client, parts map[string][]int32) {
	ps := slices.Sorted(slices.Values(parts[m.cfg.CommandsTopic()]))
	if len(ps) == 0 {
		return
	}
	m.own.Lock()
	m.mu.Lock()
	for _, p := range ps {
		m.o.Drop(p)
		m.f.Drop(p)
		delete(m.assigned, p)
		delete(m.taken, p)
		delete(m.retake, p)
	}
	m.mu.Unlock()
	m.own.Unlock()
	if m.h.Revoked != nil {
		m.h.Revoked(ctx, ps)
	}
}

// take restores and claims partition p if the group still assigns it
// (and, again, if p is still left to take again: an assignment may have
// taken it since the rounds looked), starts its forwards once its first
// write counted (Forwarder.Take: everything its book owes is sent again),
// and tells the node. It reports whether the member writes p; a failed
// take leaves p unwritten, and left to
// take again if its take failed or its first write's outcome is unknown,
// and not if that write was fenced (another member claimed p since: the
// group gave it away, and the member's revoke of it is coming) nor if its
// claim is stale (only the next era's claim takes it).
func (m *ChainMember) take(ctx context.Context, cl *kgo.Client, p int32, again bool) (bool, error) {
	m.own.Lock()
	defer m.own.Unlock()
	m.mu.Lock()
	assigned, left := m.assigned[p], m.retake[p]
	delete(m.retake, p)
	m.mu.Unlock()
	if !assigned || (again && !left) {
		return false, nil
	}
	t, err := m.claim(ctx, cl, p)
	if err == nil && t.First.Result != Counted {
		err = fmt.Errorf("kafkalog: partition %d's first write did not count (result %d)", p, t.First.Result)
	}
	if err != nil {
		m.mu.Lock()
		if m.assigned[p] && !errors.Is(err, ErrStaleClaim) && t.First.Result != Fenced {
			m.retake[p] = true
		}
		delete(m.taken, p) // the Owner dropped p: a round must not write it
		m.mu.Unlock()
		m.f.Drop(p)
		m.failed(ctx, p, err)
		return false, err
	}
	book, _ := m.o.Book(p)
	m.f.Take(p, book, time.Now())
	m.mu.Lock()
	m.takes++
	m.taken[p] = m.takes
	m.mu.Unlock()
	if m.h.Taken != nil {
		m.h.Taken(ctx, p, t)
	}
	return true, nil
}

// failed tells the node of p's take that did not take it.
func (m *ChainMember) failed(ctx context.Context, p int32, err error) {
	if m.h.TakeFailed != nil {
		m.h.TakeFailed(ctx, p, err)
	}
}

// claim is Owner.Take of p, from where the node's copy stands, for the
// member's generation of the group.
func (m *ChainMember) claim(ctx context.Context, cl *kgo.Client, p int32) (Taken, error) {
	from, apply := LogStart(), func([]byte, []byte) error { return nil }
	if m.h.Restore != nil {
		var err error
		if from, apply, err = m.h.Restore(ctx, p); err != nil {
			return Taken{}, fmt.Errorf("kafkalog: the copy of partition %d: %w", p, err)
		}
	}
	member, generation := cl.GroupMetadata()
	return m.o.Take(ctx, p, from, Claim{Generation: generation, Member: member}, apply)
}

// pause stops reading p's commands until a take seeks it.
func pause(cl *kgo.Client, topic string, p int32) {
	cl.PauseFetchPartitions(map[string][]int32{topic: {p}})
}

// resume reads p's commands again.
func resume(cl *kgo.Client, topic string, p int32) {
	cl.ResumeFetchPartitions(map[string][]int32{topic: {p}})
}

// retakeAll takes again the partitions left to retake, and seeks each one
// taken to its position (seek). A partition whose take or seek fails is
// left untaken, the node told (TakeFailed): the others' rounds go on.
func (m *ChainMember) retakeAll(ctx context.Context) {
	m.mu.Lock()
	ps := slices.Sorted(maps.Keys(m.retake))
	m.mu.Unlock()
	for _, p := range ps {
		if ok, _ := m.take(ctx, m.g.cl, p, true); !ok {
			continue
		}
		if err := m.seek(ctx, p); err != nil {
			m.own.Lock()
			m.o.Drop(p)
			m.release(p, Unknown)
			m.failed(ctx, p, err)
			m.own.Unlock()
		}
	}
}

// Check is Owner.Check under the member's serialisation of its Owner's
// calls, for the node to call between its rounds: a partition the check
// finds fenced is no longer written nor read, and one whose write's
// outcome is unknown is taken again before the next round, as after a
// round's write.
func (m *ChainMember) Check(ctx context.Context) ([]Outcome, error) {
	m.own.Lock()
	defer m.own.Unlock()
	out, err := m.o.Check(ctx)
	for _, o := range out {
		if o.Result != Counted {
			m.release(o.Partition, o.Result)
		}
	}
	return out, err
}

// seek reads p's commands on from its trailer's position, or, if no
// trailer counts, the group's committed offset, or the partition's start.
// Setting the offset drops the records the client holds, which the take
// made stale.
func (m *ChainMember) seek(ctx context.Context, p int32) error {
	topic := m.cfg.CommandsTopic()
	at, _ := m.o.Commands(p)
	if at < 0 {
		var err error
		if at, err = m.committed(ctx, p); err != nil {
			return err
		}
	}
	m.g.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {p: {Epoch: -1, Offset: at}}})
	resume(m.g.cl, topic, p)
	return nil
}

// committed is the group's committed offset of p, waiting for any
// transaction committing one to end (transactional rounds of older surge
// committed them), or the partition's start if none.
func (m *ChainMember) committed(ctx context.Context, p int32) (int64, error) {
	adm, topic := kadm.NewClient(m.g.cl), m.cfg.CommandsTopic()
	offsets, err := adm.FetchOffsets(kadm.RequireStable(ctx), m.cfg.Group())
	if err == nil {
		err = offsets.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("kafkalog: committed offsets of %s: %w", m.cfg.Group(), err)
	}
	if o, ok := offsets.Lookup(topic, p); ok && o.At >= 0 {
		return o.At, nil
	}
	return listOffset(ctx, adm.ListStartOffsets, topic, p)
}
