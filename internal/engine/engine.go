// Package engine runs surge's shards: it routes each command to the shard
// that owns its key, applies commands in batches, and makes each batch
// durable with one storage commit before any reply (group commit).
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/telemetry"
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
	// MaxBatch bounds the commands applied per storage commit.
	MaxBatch int
	// DefaultCurrency is the currency of @world when it is first created.
	DefaultCurrency string
	// NoSync acknowledges writes before fsync (see store.Options.NoSync).
	NoSync bool
	// MemTableBytes sizes the storage memtable (0: the store's default).
	MemTableBytes uint64
	// SweepEntries is how many history entries the shards write, together,
	// while a sweep moves every account's Recent entries into a chunk
	// (0: defaultSweepEntries). It bounds the history held in memory and in
	// the journal (journal.go).
	SweepEntries int
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

	// parallelEntries overrides defaultParallelEntries, for tests that
	// need both ways of running a round's later steps.
	parallelEntries int
}

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
	if c.parallelEntries <= 0 {
		c.parallelEntries = defaultParallelEntries
	}
	if c.SweepEntries <= 0 {
		c.SweepEntries = defaultSweepEntries
	}
	if c.DefaultCurrency == "" {
		c.DefaultCurrency = "USD"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Engine is the running set of shards over one store.
type Engine struct {
	cfg     Config
	db      *store.Store
	shards  []*shard
	metrics *metrics
	wg      sync.WaitGroup
	closed  atomic.Bool

	// accounts is the committed view: a copy of every account as of its
	// last durable batch, published after the fsync. Reads are served from
	// it, so they never see a write that a crash could still undo. Since
	// accounts are never deleted, it also tells every shard which accounts
	// exist and in which currency.
	accounts *view
	// inflight holds the ids of transfers being written and not yet
	// published, with the shard writing each. A client-chosen id is claimed
	// here before it is looked up, so two shards never create the same id;
	// and since Pebble shows a batch before its fsync ends, readers that
	// meet an in-flight id wait for the next publish instead of showing a
	// write a crash could still undo.
	inflight *stripedMap[int] // transfer id → shard index
	// viewMu orders publishes against Stats: a round's publish holds it
	// shared while the shards store their accounts, Stats takes it alone,
	// so Stats sees whole rounds only — a consistent cut of the committed
	// view, in which balances sum to 0.
	viewMu sync.RWMutex
	// published is closed, and replaced, every time a round publishes.
	published atomic.Pointer[chan struct{}]
	// ids answers "is this transfer id new?" without storage, mostly.
	ids *idFilter
	// history keeps the newest history page of recently read accounts.
	history *historyCache
	// ready is signalled when a log may hold commands; stepDone, when a
	// shard has done its step of a round (round.go).
	ready    chan struct{}
	stepDone chan struct{}
	// exclusive holds the commands that need every shard at once.
	exclusive Log
	// draining is set once Close has closed every log.
	draining atomic.Bool
	// tk is the ticketing workload's state outside the shards.
	tk *ticketing
	// payments are the reservation payments found pending at Open, which
	// it settles once the shards run.
	payments []string
	// broken holds the error of the first round that failed to commit:
	// from then on writes are refused (round.go, abandonRound).
	broken atomic.Pointer[error]
}

// Open opens the store, rebuilds every shard's state from it, finishes
// cross-shard transfers a crash interrupted, and starts the shards.
func Open(cfg Config) (*Engine, error) {
	cfg.setDefaults()
	e := &Engine{
		cfg: cfg, metrics: newMetrics(cfg.Registerer), accounts: newView(),
		inflight: newStripedMap[int](), tk: newTicketing(),
		ready: make(chan struct{}, 1), stepDone: make(chan struct{}, cfg.Shards),
	}
	e.exclusive = newMemLog(cfg.QueueCapacity, e.ready)
	next := make(chan struct{})
	e.published.Store(&next)
	db, err := store.Open(cfg.Dir, store.Options{
		NoSync: cfg.NoSync, MemTableBytes: cfg.MemTableBytes, OnSync: e.metrics.observeSync, UncompressedL0: true,
		OnFault: cfg.OnStorageFault, AcceptWALLoss: cfg.AcceptWALLoss,
	})
	if err != nil {
		return nil, err
	}
	e.db = db
	for i := range cfg.Shards {
		e.shards = append(e.shards, newShard(i, e))
	}
	e.metrics.watchQueues(e.shards)
	e.metrics.watchTickets(e)
	err = e.load()
	if err == nil {
		err = e.resumeCredits()
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	for _, s := range e.shards {
		s.scheduleExpiry()
		e.wg.Add(1)
		go s.run()
	}
	e.wg.Add(1)
	go e.run()
	if err := e.ensureWorld(); err != nil {
		e.Close()
		return nil, err
	}
	e.settlePayments(e.payments)
	e.payments = nil
	return e, nil
}

// load puts every stored account and open hold into its shard's Book.
// Stored account records hold what an account was opened with; its balance
// and entry count come from its newest history entry (in a chunk or the
// journal) and its pending sum from its open holds, which is all that
// transfers write.
func (e *Engine) load() error {
	// The filter grows as it fills, so one pass over the ids sizes it.
	var err error
	e.ids = newIDFilter(0)
	e.history = newHistoryCache()
	e.ids.add(e.db.TransferIDs(&err))
	if err != nil {
		return fmt.Errorf("load transfer ids: %w", err)
	}
	held := make(map[string]int64)
	err = e.db.EachHold(func(t ledger.Transfer) error {
		e.shardFor(t.From).book.LoadPending(t)
		held[t.From] += t.Amount
		if paymentReservation(t.ID) != "" {
			e.payments = append(e.payments, t.ID)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load pending transfers: %w", err)
	}
	err = e.db.EachAccount(func(a ledger.Account) error {
		last, err := e.db.History(a.ID, math.MaxUint64, 1)
		if err != nil {
			return err
		}
		if len(last) == 1 {
			a.Balance, a.Entries = last[0].BalanceAfter, last[0].Seq
		}
		a.Pending = held[a.ID]
		e.shardFor(a.ID).book.Load(a)
		return nil
	})
	if err != nil {
		return fmt.Errorf("load accounts: %w", err)
	}
	if err := e.replayJournal(); err != nil {
		return fmt.Errorf("replay history journal: %w", err)
	}
	for _, s := range e.shards {
		for _, a := range s.book.Accounts() {
			e.accounts.store(a)
		}
	}
	return e.loadTickets()
}

// resumeCredits applies the credits of outbox records. surge wrote them
// before both legs of a transfer between shards shared a storage batch: the
// debit committed with an outbox record, and the credit and the record's
// deletion in a later batch of the receiving shard. Data a crash left
// between the two still holds them; the credits are applied and the
// records deleted in one storage batch before any request is served.
func (e *Engine) resumeCredits() error {
	w := store.NewLedgerBatch(e.db.NewBatch())
	n := 0
	err := e.db.EachOutbox(func(id string, legs []ledger.CreditLeg) error {
		for _, leg := range legs {
			e.shardFor(leg.To).book.ApplyCredit(leg)
		}
		w.DeleteOutbox(id)
		n++
		return nil
	})
	if err != nil || n == 0 {
		_ = w.Close()
		return err
	}
	now := time.Now().UTC()
	for _, s := range e.shards {
		s.wb = w
	}
	e.each(e.shards, stepWrite, now, false)
	if err := e.commitRound(); err != nil {
		return err
	}
	e.publish(now, false)
	for _, s := range e.shards {
		s.book.Reset()
	}
	e.cfg.Logger.Info("resumed interrupted cross-shard transfers", "outbox_records", n)
	return nil
}

func (e *Engine) ensureWorld() error {
	if e.db.Fault() != nil {
		e.broken.CompareAndSwap(nil, new(error(e.db.Fault())))
		return nil // a store that refuses writes cannot create it; reads go on
	}
	if a, ok := e.account(ledger.WorldID); ok {
		if a.Currency != e.cfg.DefaultCurrency {
			e.cfg.Logger.Warn("@world keeps its original currency", "currency", a.Currency, "flag", e.cfg.DefaultCurrency)
		}
		return nil
	}
	c, err := e.submitWait(e.shardFor(ledger.WorldID), CmdCreateAccount{Spec: ledger.AccountSpec{
		ID: ledger.WorldID, Currency: e.cfg.DefaultCurrency,
	}})
	if err != nil {
		return err
	}
	return c.err
}

// Close stops the shards once their queues are drained, then closes the
// store. Callers must stop sending requests first.
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
		if s.expiry != nil {
			s.expiry.Stop()
		}
	}
	return e.db.Close()
}

// Store returns the engine's storage, for workloads that write to it
// directly (they share its WAL and so its fsyncs).
func (e *Engine) Store() *store.Store { return e.db }

// Shards returns the number of shards.
func (e *Engine) Shards() int { return len(e.shards) }

func (e *Engine) shardFor(key string) *shard { return e.shards[e.shardIndex(key)] }

func (e *Engine) shardIndex(key string) int {
	return int(xxhash.Sum64String(key) % uint64(len(e.shards)))
}

func (e *Engine) account(id string) (ledger.Account, bool) {
	return e.accounts.load(id)
}

// write adds the shard's changes to its storage batch, and marks its new
// transfers in flight until they are published.
func (s *shard) write() {
	w := s.wb
	ch := s.book.Changes()
	for _, t := range ch.Transfers {
		s.eng.inflight.store(t.ID, s.id)
	}
	writeChanges(w, ch)
	s.writeHistory(w)
	for _, r := range s.attached {
		_ = w.Set(r.Key, r.Value, nil)
	}
	tw := store.NewTicketBatch(w.Batch)
	for _, r := range s.desk.Changes() {
		tw.PutReservation(r)
	}
}

func writeChanges(w *store.LedgerBatch, ch *ledger.Changes) {
	for _, a := range ch.Opened {
		w.PutAccount(a)
	}
	for _, t := range ch.Transfers {
		w.PutTransfer(t)
	}
	for _, id := range ch.HoldsOpened {
		w.PutHold(id)
	}
	for _, id := range ch.HoldsClosed {
		w.DeleteHold(id)
	}
}

// publish makes a durable round visible to readers: every shard's
// accounts in the committed view, all at once for Stats (viewMu); then its
// transfer ids in the id filter and out of flight, and its reservations'
// outcomes; then it wakes those waiting for a publish.
func (e *Engine) publish(now time.Time, parallel bool) {
	e.viewMu.RLock()
	e.each(e.shards, stepShowAccounts, now, parallel)
	e.viewMu.RUnlock()
	e.each(e.shards, stepReleaseIDs, now, parallel)
	for _, s := range e.shards {
		e.publishReservations(s.desk.Changes())
	}
	next := make(chan struct{})
	close(*e.published.Swap(&next))
}

// showAccounts puts the shard's changed accounts in the committed view;
// the caller holds viewMu.
func (s *shard) showAccounts() {
	for _, a := range s.book.Changes().Accounts {
		s.eng.accounts.store(a)
	}
}

// releaseIDs adds the shard's new transfer ids to the id filter and takes
// them out of flight.
func (s *shard) releaseIDs() {
	ch := s.book.Changes()
	s.eng.ids.add(func(yield func(string) bool) {
		for _, t := range ch.Transfers {
			if !yield(t.ID) {
				return
			}
		}
	})
	for _, t := range ch.Transfers {
		deleteIf(s.eng.inflight, t.ID, s.id)
	}
}

// submit queues cmd on s; the returned call completes once it is durable.
func (e *Engine) submit(ctx context.Context, s *shard, cmd Command) (*call, error) {
	return e.enqueue(ctx, s.log, cmd)
}

func (e *Engine) enqueue(ctx context.Context, l Log, cmd Command) (*call, error) {
	if err := e.refusal(); err != nil {
		return nil, err
	}
	c := newCall()
	env := Envelope{Cmd: cmd, call: c}
	if telemetry.TracingEnabled() {
		env.link, _ = telemetry.Link(ctx)
	}
	if err := l.Append(env, false); err != nil {
		return nil, queueError(err)
	}
	return c, nil
}

func (e *Engine) submitWait(s *shard, cmd Command) (*call, error) {
	c, err := e.submit(context.Background(), s, cmd)
	if err != nil {
		return nil, err
	}
	<-c.done
	return c, nil
}

func queueError(err error) error {
	if errors.Is(err, ErrOverloaded) {
		return ledger.Errorf(ledger.CodeOverloaded, "server busy, retry shortly")
	}
	return ledger.Errorf(ledger.CodeOverloaded, "server shutting down")
}
