package engine

import (
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/store"
)

// Config sets up an Engine.
type Config struct {
	// Dir is the storage directory.
	Dir string
	// Shards is the number of shards; 0 means one per CPU.
	Shards int
	// QueueCapacity bounds each shard's queue; beyond it clients are told
	// to retry (overloaded).
	QueueCapacity int
	// MaxBatch bounds the commands a shard applies per round.
	MaxBatch int
	// NoSync acknowledges writes before fsync (see store.Options.NoSync).
	NoSync bool
	// MemTableBytes sizes the storage memtable (0: the store's default).
	MemTableBytes uint64
	// ParallelSize is the round size (the slices' Size, summed) from which
	// a round's later steps run on the shards' goroutines (0:
	// DefaultParallelSize). Tests set it to run both ways.
	ParallelSize int
	// Registerer receives the engine's metrics; nil means none.
	Registerer prometheus.Registerer
	// Logger receives operational messages; nil means slog.Default().
	Logger *slog.Logger
	// AcceptWALLoss opens a store whose newest WAL is damaged, dropping
	// the records after the damage (store.Options.AcceptWALLoss).
	AcceptWALLoss bool
	// OnStorageFault, if set, is told once when the store stops taking
	// writes (store.Options.OnFault).
	OnStorageFault func(*store.Fault)
	// Commit, if set, makes rounds durable in place of the store's fsync
	// (commit.go), and the store, a cache the committer's log rebuilds,
	// keeps no WAL (store.Options.NoWAL); nil, the default, commits each
	// round to the store.
	Commit Committer
}

// DefaultParallelSize is the default Config.ParallelSize. Handing a step
// to a shard and back costs two goroutine wake-ups, a few microseconds; a
// transfer's credit, record and publishing cost about a microsecond. On
// the ledger's batch route, rounds of tens of thousands of transfers ran
// those steps on one CPU while the other idled (pprof).
const DefaultParallelSize = 1024

func (c *Config) setDefaults() {
	if c.Shards <= 0 {
		c.Shards = runtime.NumCPU()
	}
	if c.QueueCapacity <= 0 {
		c.QueueCapacity = 65536
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 4096
	}
	if c.ParallelSize <= 0 {
		c.ParallelSize = DefaultParallelSize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Errors from queueing a command.
var (
	// ErrOverloaded rejects a command because the shard's queue is full.
	ErrOverloaded = errors.New("engine: shard queue full")
	// ErrClosed rejects a command because the engine is shutting down.
	ErrClosed = errors.New("engine: closed")
)

// Engine is the running set of shards over one store.
type Engine struct {
	cfg     Config
	db      *store.Store
	shards  []*shard
	metrics *metrics
	wg      sync.WaitGroup
	started atomic.Bool
	closed  atomic.Bool
	// viewMu orders publishes against Consistent: a round's publish holds
	// it shared while the slices publish, Consistent takes it alone, so
	// its readers see whole rounds only.
	viewMu sync.RWMutex
	// published is closed, and replaced, every time a round publishes.
	published atomic.Pointer[chan struct{}]
	// ready is signalled when a log may hold commands; stepDone, when a
	// shard has done its step of a round (round.go).
	ready    chan struct{}
	stepDone chan struct{}
	// exclusive holds the commands that need every shard at once.
	exclusive Log
	// draining is set once Close has closed every log.
	draining atomic.Bool
	// broken holds the error of the first round that failed to commit:
	// from then on writes are refused (round.go, abandonRound).
	broken atomic.Pointer[error]
}

// Open opens the store and sets up the shards; no round runs before
// Start, so that the workloads can load their state first.
func Open(cfg Config) (*Engine, error) {
	cfg.setDefaults()
	e := &Engine{
		cfg: cfg, metrics: newMetrics(cfg.Registerer),
		ready: make(chan struct{}, 1), stepDone: make(chan struct{}, cfg.Shards),
	}
	e.exclusive = newMemLog(cfg.QueueCapacity, e.ready)
	next := make(chan struct{})
	e.published.Store(&next)
	db, err := store.Open(cfg.Dir, store.Options{
		NoSync: cfg.NoSync, NoWAL: cfg.Commit != nil, MemTableBytes: cfg.MemTableBytes, OnSync: e.metrics.observeSync, UncompressedL0: true,
		OnFault: cfg.OnStorageFault, AcceptWALLoss: cfg.AcceptWALLoss, HoldCompactions: true,
	})
	if err != nil {
		return nil, err
	}
	e.db = db
	if f := db.Fault(); f != nil { // opened read-only: refuse writes from the start
		e.broken.Store(new(error(f)))
	}
	for i := range cfg.Shards {
		e.shards = append(e.shards, newShard(i, e))
	}
	e.metrics.watchQueues(e.shards)
	return e, nil
}

// Attach adds a workload, as its slices, one per shard in shard order,
// and returns the port its commands go through. Workloads attach before
// Start.
func (e *Engine) Attach(slices []Slice) *Port {
	if e.started.Load() || len(slices) != len(e.shards) {
		panic("engine: Attach needs one slice per shard, before Start")
	}
	for i, s := range e.shards {
		s.slices = append(s.slices, slices[i])
	}
	return &Port{e: e, workload: uint8(len(e.shards[0].slices) - 1)}
}

// Start starts running rounds.
func (e *Engine) Start() {
	e.started.Store(true)
	// The workloads have loaded their state: recovery's reads are done.
	e.db.ReleaseCompactions()
	for _, s := range e.shards {
		s.scheduleTick(s.finishSlices())
		e.wg.Add(1)
		go s.run()
	}
	e.wg.Add(1)
	go e.run()
}

// Close stops the shards once their logs are drained, then closes the
// store. Callers must stop sending commands first.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	for _, s := range e.shards {
		s.log.Close()
	}
	e.exclusive.Close()
	e.draining.Store(true)
	select {
	case e.ready <- struct{}{}:
	default:
	}
	e.wg.Wait()
	for _, s := range e.shards {
		if s.tick != nil {
			s.tick.Stop()
		}
	}
	return e.db.Close()
}

// Store returns the engine's storage: workloads read their state from it
// before Start, and write to it directly what needs no round (they share
// its WAL and so its fsyncs).
func (e *Engine) Store() *store.Store { return e.db }

// Shards returns the number of shards.
func (e *Engine) Shards() int { return len(e.shards) }

// ShardOf returns the shard that owns key.
func (e *Engine) ShardOf(key string) int { return ShardIndex(key, len(e.shards)) }

// Consistent runs read while no round publishes: what read sees of the
// slices' published state is a cut of whole rounds.
func (e *Engine) Consistent(read func()) {
	e.viewMu.Lock()
	defer e.viewMu.Unlock()
	read()
}

// Published returns a channel closed when the next round publishes. Take
// it before looking at published state, so that a publish after the look
// is not missed.
func (e *Engine) Published() <-chan struct{} { return *e.published.Load() }

// publish makes a durable round visible to readers: every slice's changes
// at once for Consistent readers (viewMu), then their announcements; then
// it wakes those waiting for a publish.
func (e *Engine) publish(now time.Time, parallel bool) {
	e.viewMu.RLock()
	e.each(e.shards, stepPublish, now, parallel)
	e.viewMu.RUnlock()
	e.each(e.shards, stepAnnounce, now, parallel)
	next := make(chan struct{})
	close(*e.published.Swap(&next))
}

// QueueLen is the number of commands waiting in shard's log.
func (e *Engine) QueueLen(shard int) int { return e.shards[shard].log.Len() }
