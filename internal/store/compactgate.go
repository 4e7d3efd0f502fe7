package store

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// compactionGate is the compaction scheduler of a store opened with
// Options.HoldCompactions: it grants no compaction until ReleaseCompactions,
// then as many at once as Pebble asks for (GetAllowedWithoutPermission), as
// Pebble's default scheduler does. A server killed under load leaves level
// 0 full, and the compactions Pebble starts at once on opening it took 1.6
// of the 3.6 s of CPU a restart at 11.7 M transfers spent before it was
// ready (CPU profile of the recovery), on a machine of two cores. Holding
// them lets recovery have the CPUs; the work is done once it serves.
// Writes during recovery are few (recovery's own batches), far from level
// 0's stop threshold.
//
// Pebble's default scheduler cannot be wrapped (its constructor is not
// exported) and it has no hold. This one follows its locking protocol:
// Pebble calls TrySchedule with its own mutex held, so grants initiated
// here (grant) call back into the DB without holding the gate's.
type compactionGate struct {
	mu           sync.Mutex
	idle         *sync.Cond // signalled when granting ends
	db           pebble.DBForCompaction
	held         bool
	granting     bool
	unregistered bool
	running      int
}

var _ pebble.CompactionScheduler = (*compactionGate)(nil)

func newCompactionGate() *compactionGate {
	g := &compactionGate{held: true}
	g.idle = sync.NewCond(&g.mu)
	return g
}

// Register implements pebble.CompactionScheduler.
func (g *compactionGate) Register(_ int, db pebble.DBForCompaction) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.db = db
}

// Unregister implements pebble.CompactionScheduler: it returns once no
// grant is calling into the DB, and none starts later.
func (g *compactionGate) Unregister() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unregistered = true
	for g.granting {
		g.idle.Wait()
	}
}

// TrySchedule implements pebble.CompactionScheduler.
func (g *compactionGate) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held || g.unregistered || g.running >= g.db.GetAllowedWithoutPermission() {
		return false, nil
	}
	g.running++
	return true, g
}

// UpdateGetAllowedWithoutPermission implements pebble.CompactionScheduler.
// Pebble calls it holding its mutex, so the grant runs apart.
func (g *compactionGate) UpdateGetAllowedWithoutPermission() { go g.grant() }

// release lets compactions run, starting those Pebble is waiting for.
func (g *compactionGate) release() {
	g.mu.Lock()
	g.held = false
	g.mu.Unlock()
	g.grant()
}

// grant starts waiting compactions while Pebble allows more.
func (g *compactionGate) grant() {
	g.mu.Lock()
	if g.held || g.unregistered || g.granting {
		g.mu.Unlock()
		return
	}
	g.granting = true
	for !g.unregistered && g.running < g.db.GetAllowedWithoutPermission() {
		g.mu.Unlock()
		waiting, _ := g.db.GetWaitingCompaction()
		accepted := waiting && g.db.Schedule(g)
		g.mu.Lock()
		if !accepted {
			break
		}
		g.running++
	}
	g.granting = false
	g.idle.Broadcast()
	g.mu.Unlock()
}

// Started implements pebble.CompactionGrantHandle.
func (g *compactionGate) Started() {}

// MeasureCPU implements pebble.CompactionGrantHandle.
func (g *compactionGate) MeasureCPU(pebble.CompactionGoroutineKind) {}

// CumulativeStats implements pebble.CompactionGrantHandle.
func (g *compactionGate) CumulativeStats(pebble.CompactionGrantHandleStats) {}

// Done implements pebble.CompactionGrantHandle: a compaction ended, so
// another may start.
func (g *compactionGate) Done() {
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
	g.grant()
}

// ReleaseCompactions lets a store opened with Options.HoldCompactions
// compact; it does nothing otherwise, or a second time.
func (s *Store) ReleaseCompactions() {
	if s.gate != nil {
		s.gate.release()
	}
}
