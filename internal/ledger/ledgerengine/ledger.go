// Package ledgerengine runs the ledger on the engine: one Book per shard,
// each account on the shard its id hashes to, and the ledger's API over
// them (CreateAccount, Transfer, TransferBatch, ...). Writes go through
// the owning shard's log and return once durable; reads are served from
// the committed view, published after each round's fsync.
package ledgerengine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerstore"
	"github.com/surge-dev/surge/internal/store"
)

// Config sets up the ledger.
type Config struct {
	// DefaultCurrency is the currency of @world when it is first created.
	DefaultCurrency string
	// SweepEntries is how many history entries the shards write, together,
	// while a sweep moves every account's Recent entries into a chunk
	// (0: defaultSweepEntries). It bounds the history held in memory and in
	// the journal (journal.go).
	SweepEntries int
	// Logger receives operational messages; nil means slog.Default().
	Logger *slog.Logger
	// Cluster runs the ledger as a cluster node's owner of its shards
	// (cluster.go): credits between shards are forwarded, and the history
	// journal is kept for sweeps to chunk through rounds.
	Cluster bool
}

// Ledger is the ledger's state on the engine's shards, and its API.
type Ledger struct {
	cfg    Config
	eng    *engine.Engine
	port   *engine.Port
	db     ledgerstore.Store
	shards []*shard
	// accounts is the committed view: a copy of every account as of its
	// last durable round, published after the fsync. Reads are served from
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
	// ids answers "is this transfer id new?" without storage, mostly.
	ids *idFilter
	// ckpt checkpoints ids (checkpoint.go).
	ckpt *checkpointer
	// history keeps the newest history page of recently read accounts.
	history *historyCache
	// remote knows other shards' accounts' currencies, in a cluster.
	remote remoteCurrencies
	// tailsRead says that recovery read the accounts' history tails from
	// their tail records, not from the chunks (tails.go).
	tailsRead bool
}

// Open loads the ledger from eng's storage into one Book per shard and
// attaches it to eng, which must not have started yet. Start finishes
// opening once the engine runs.
func Open(eng *engine.Engine, cfg Config) (*Ledger, error) {
	if cfg.DefaultCurrency == "" {
		cfg.DefaultCurrency = "USD"
	}
	if cfg.SweepEntries <= 0 {
		cfg.SweepEntries = defaultSweepEntries
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := &Ledger{
		cfg: cfg, eng: eng, db: ledgerstore.Store{Store: eng.Store()},
		accounts: newView(), inflight: newStripedMap[int](), history: newHistoryCache(),
	}
	slices := make([]engine.Slice, eng.Shards())
	for i := range slices {
		s := newShard(i, l)
		l.shards = append(l.shards, s)
		slices[i] = s
	}
	if err := l.load(); err != nil {
		return nil, err
	}
	l.port = eng.Attach(slices)
	return l, nil
}

// Start creates @world if it does not exist yet, and checkpoints the
// transfer-id filter as recovered; the engine must be running. A store that
// refuses writes cannot create it: reads go on.
func (l *Ledger) Start(ctx context.Context) error {
	if l.db.Fault() != nil {
		return nil
	}
	l.ckpt.request()
	if a, ok := l.account(ledger.WorldID); ok {
		if a.Currency != l.cfg.DefaultCurrency {
			l.cfg.Logger.Warn("@world keeps its original currency", "currency", a.Currency, "flag", l.cfg.DefaultCurrency)
		}
		return nil
	}
	_, _, err := l.CreateAccount(ctx, ledger.AccountSpec{ID: ledger.WorldID, Currency: l.cfg.DefaultCurrency})
	return err
}

// load puts every stored account and open hold into its shard's Book.
// Stored account records hold what an account was opened with; its balance
// and entry count come from its newest history entry (in a chunk or the
// journal) and its pending sum from its open holds, which is all that
// transfers write.
func (l *Ledger) load() error {
	began := time.Now()
	js, err := l.db.JournalState()
	if err != nil {
		return fmt.Errorf("read the journal's state: %w", err)
	}
	cp, err := l.loadIDs(js)
	if err != nil {
		return err
	}
	l.cfg.Logger.Info("recovery: transfer ids loaded", "from_checkpoint", cp != nil, "elapsed", time.Since(began).Round(time.Millisecond))
	held := make(map[string]int64)
	err = l.db.EachHold(func(t ledger.Transfer) error {
		l.shardFor(t.From).book.LoadPending(t)
		held[t.From] += t.Amount
		return nil
	})
	if err != nil {
		return fmt.Errorf("load pending transfers: %w", err)
	}
	if l.tailsRead, err = l.loadAccounts(held, js); err != nil {
		return fmt.Errorf("load accounts: %w", err)
	}
	l.cfg.Logger.Info("recovery: accounts and holds loaded", "from_tail_records", l.tailsRead, "elapsed", time.Since(began).Round(time.Millisecond))
	if l.cfg.Cluster {
		if err := l.loadCluster(); err != nil {
			return fmt.Errorf("load cluster sums: %w", err)
		}
	}
	if err := l.replayJournal(cp, js.Trimmed); err != nil {
		return fmt.Errorf("replay history journal: %w", err)
	}
	for _, s := range l.shards {
		for _, a := range s.book.Accounts() {
			l.accounts.store(a)
		}
	}
	return nil
}

// Close waits for a checkpoint being written and starts no other. The
// engine goes on; close it after.
func (l *Ledger) Close() { l.ckpt.close() }

// PendingIDs returns the ids of the open holds (pending transfers) whose id
// starts with prefix, as stored: another workload's payments that a crash
// may have left unsettled.
func (l *Ledger) PendingIDs(prefix string) ([]string, error) {
	var ids []string
	err := l.db.EachHold(func(t ledger.Transfer) error {
		if strings.HasPrefix(t.ID, prefix) {
			ids = append(ids, t.ID)
		}
		return nil
	})
	return ids, err
}

func (l *Ledger) shardFor(key string) *shard { return l.shards[l.eng.ShardOf(key)] }

func (l *Ledger) account(id string) (ledger.Account, bool) { return l.accounts.load(id) }

// QueueError is the ledger error a client hears for a command the engine
// refused to queue: overloaded, or shutting down.
func QueueError(err error) error {
	if errors.Is(err, engine.ErrOverloaded) {
		return ledger.Errorf(ledger.CodeOverloaded, "server busy, retry shortly")
	}
	if errors.Is(err, engine.ErrClosed) {
		return ledger.Errorf(ledger.CodeOverloaded, "server shutting down")
	}
	if errors.Is(err, store.ErrFull) {
		return ledger.Errorf(ledger.CodeStorageFull, "storage full: writes are refused until space is freed and surge restarts (it does so by itself); reads are served")
	}
	if errors.Is(err, store.ErrUnavailable) {
		return ledger.Errorf(ledger.CodeStorageUnavailable, "storage unavailable: writes are refused; reads are served (%v)", err)
	}
	return err
}
