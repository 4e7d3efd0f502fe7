package kafkalog

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Which commands partitions a member owns (Member.owned, Handlers) must
// follow every assignment the group gives it: a member that went on
// applying a partition it gave up would write that partition's changelog
// beside its new owner, and its transactions would commit, since the
// group coordinator checks the generation and the member id of the
// offsets a transaction commits, not which partitions they are.
//
// franz-go's callbacks alone do not tell every move: a GroupTransactSession
// hands the member's revoke callback only the first revoke, and its lost
// callback only the first loss, after the end of a transaction (End); it
// drops the later ones until the next End. A member that reads no command
// meanwhile (idle, rebuilding its state, or failing to begin a round) ends
// no transaction, and would keep the partitions of the dropped revokes.
// So the member also watches, beside the callbacks:
//   - each assignment the group's SyncGroup answer gives it, whole: a
//     partition owned and not in it is given up at once, before franz-go's
//     revoke of it runs (watch);
//   - the end of a group session on an error, after which it owns nothing
//     (lossHook);
//   - the end of its own session (Member.renew).
//
// A transaction under way when a partition moves still never commits a
// write to it after its new owner reads it: in a rebalance the new owner
// gets the partition only once the member's revoke of it has run, and
// franz-go's revoke, even one it drops, waits for an End that is
// committing, and makes a transaction it comes in the middle of abort
// (GroupTransactSession.End); a member expelled from the group commits
// nothing (its generation is stale). The round checks, besides, that the
// member still owns every partition whose changelog it wrote or whose
// local commands it took when its offsets commit (Member.fenced).

// watch is the member's group balancer, franz-go's default
// (cooperative-sticky), telling the member each assignment the group
// gives it.
type watch struct {
	kgo.GroupBalancer
	m *Member
}

// ParseSyncAssignment implements kgo.GroupBalancer: it gives up the owned
// partitions the assignment leaves out.
func (w watch) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	assigned, err := w.GroupBalancer.ParseSyncAssignment(assignment)
	if err == nil {
		w.m.keepOnly(context.Background(), assigned[w.m.cfg.CommandsTopic()])
	}
	return assigned, err
}

// lossHook is a hook of the member's client: it tells the member each
// group session that ends on an error.
type lossHook struct{ m *Member }

// OnGroupManageError implements kgo.HookGroupManageError: the session that
// ended lost every partition it owned (franz-go called, or dropped, the
// lost callback before).
func (h lossHook) OnGroupManageError(error) { h.m.keepOnly(context.Background(), nil) }

// track returns a group callback that records the commands partitions it
// is given as owned (gained) or not, then tells the member's handlers.
func (m *Member) track(gained bool) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(ctx context.Context, _ *kgo.Client, parts map[string][]int32) {
		ps := slices.Sorted(slices.Values(parts[m.cfg.CommandsTopic()]))
		if !gained {
			m.give(ctx, ps)
			return
		}
		m.mu.Lock()
		for _, p := range ps {
			m.owned[p] = true
		}
		m.mu.Unlock()
		if m.h.Assigned != nil && len(ps) > 0 {
			m.h.Assigned(ctx, ps)
		}
	}
}

// give records that the member no longer owns ps and tells its handlers.
func (m *Member) give(ctx context.Context, ps []int32) {
	m.mu.Lock()
	for _, p := range ps {
		delete(m.owned, p)
		delete(m.positioned, p)
	}
	m.mu.Unlock()
	if m.h.Revoked != nil && len(ps) > 0 {
		m.h.Revoked(ctx, ps)
	}
}

// keepOnly gives up the owned partitions not in keep.
func (m *Member) keepOnly(ctx context.Context, keep []int32) {
	m.mu.Lock()
	gone := slices.Sorted(maps.Keys(m.owned))
	m.mu.Unlock()
	gone = slices.DeleteFunc(gone, func(p int32) bool { return slices.Contains(keep, p) })
	m.give(ctx, gone)
}

// disowned returns one of ps the member does not own, if any.
func (m *Member) disowned(ps []int32) (int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps {
		if !m.owned[p] {
			return p, true
		}
	}
	return 0, false
}
