package ledgerengine

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerstore"
	"github.com/surge-dev/surge/internal/store"
)

// shard is the ledger's slice of one engine shard: the Book of the
// accounts that hash to it. It is the ledger's engine.Slice.
type shard struct {
	id   int
	l    *Ledger
	book *ledger.Book
	// outgoing indexes the round's credits (Changes().Credits) by the
	// shard that owns the receiving account; routed counts the credits
	// indexed so far.
	outgoing [][]int32
	routed   int
	// wb writes the round's changes into the engine's storage batch.
	wb ledgerstore.LedgerBatch
	// attached are the round's records attached to new transfers.
	attached []store.Record
	history  historyWriter
	// credits are the shard's credit sums in a cluster (cluster.go).
	credits        ledger.CreditSums
	creditsChanged bool
	// outbox are the round's commands for other shards and replies of
	// atomic batches across shards, in a cluster (atomic.go).
	outbox []engine.Forward
	// carried is the receiver of the transfer being applied, with the
	// currency its command carries (the sender's lookup of it), which the
	// Book's lookup answers before any map: accounts never change
	// currency, and most transfers in a cluster name another node's.
	carried carriedCurrency
}

// carriedCurrency is account id's currency as a command carries it.
type carriedCurrency struct{ id, currency string }

func newShard(id int, l *Ledger) *shard {
	s := &shard{id: id, l: l, outgoing: make([][]int32, l.eng.Shards())}
	s.wb.NoTails = l.cfg.Cluster // loadAccounts reads a cluster's chunks
	s.book = ledger.NewBook(lookup{s})
	return s
}

// Apply applies the ledger's commands of the round to the Book, then
// indexes the credits they owe other shards.
func (s *shard) Apply(cmds []engine.Command, now time.Time) {
	for _, c := range cmds {
		s.apply(c, now)
	}
	s.routeCredits()
}

func (s *shard) apply(c engine.Command, now time.Time) {
	switch c := c.(type) {
	case *CreateAccount:
		c.Account, c.Created, c.Err = s.book.CreateAccount(c.Spec, now)
	case *Transfer:
		s.carried = carriedCurrency{id: c.Req.To, currency: c.Currency}
		c.Transfer, c.Replayed, c.Err = s.book.Transfer(c.Req, now)
		s.carried = carriedCurrency{}
		if c.Err == nil && !c.Replayed {
			s.attached = append(s.attached, c.attached...)
		}
	case *Batch:
		s.l.remote.learn(c.Currencies)
		c.Results = s.applyBatch(c, now)
	case *Post:
		c.Transfer, c.Err = s.book.Post(c.ID, c.Amount, now)
	case *Void:
		c.Transfer, c.Err = s.book.Void(c.ID, now)
	case engine.Tick:
		s.book.Expire(now)
	case *Atomic:
		s.applyAtomic(c, now)
	default:
		s.applyCluster(c)
	}
}

func (s *shard) applyBatch(cmd *Batch, now time.Time) []ledger.BatchResult {
	res := make([]ledger.BatchResult, len(cmd.Reqs))
	if !cmd.Atomic {
		for i, r := range cmd.Reqs {
			res[i].Transfer, res[i].Replayed, res[i].Err = s.book.Transfer(r, now)
		}
		return res
	}
	sp := s.book.Begin()
	for i, r := range cmd.Reqs {
		t, replayed, err := s.book.Transfer(r, now)
		if err != nil {
			s.book.Rollback(sp)
			return ledger.AbortedBatch(cmd.Reqs, i, err)
		}
		res[i] = ledger.BatchResult{Transfer: t, Replayed: replayed}
	}
	s.book.Commit()
	return res
}

// routeCredits sorts the shard's credits not yet routed by receiving
// shard, once, so that every receiver finds its own without hashing them
// all.
func (s *shard) routeCredits() {
	credits := s.book.Changes().Credits
	for i := s.routed; i < len(credits); i++ {
		to := s.l.eng.ShardOf(credits[i].To)
		s.outgoing[to] = append(s.outgoing[to], int32(i))
	}
	s.routed = len(credits)
}

// Size counts the round's history entries and credits.
func (s *shard) Size() int {
	ch := s.book.Changes()
	return ch.JournalEntries + len(ch.Credits)
}

// Receive applies the credits that the round's debits owe the shard's
// accounts: the shards are parked, so their Changes hold still. The order,
// by debiting shard and then by debit, is the same whichever goroutine
// runs it. In a cluster the credits are forwarded instead (Forwards).
func (s *shard) Receive() {
	if s.l.cfg.Cluster {
		return
	}
	for _, from := range s.l.shards {
		credits := from.book.Changes().Credits
		for _, i := range from.outgoing[s.id] {
			s.book.ApplyCredit(credits[i])
		}
	}
}

// Write adds the shard's changes to the round's storage batch, and marks
// its new transfers in flight until they are published.
func (s *shard) Write(b *pebble.Batch) {
	s.wb.Batch = b
	w := &s.wb
	ch := s.book.Changes()
	for _, t := range ch.Transfers {
		s.l.inflight.store(t.ID, s.id)
	}
	writeChanges(w, ch)
	s.writeHistory(w)
	if s.l.cfg.Cluster {
		s.writeCredits(w)
	}
	for _, r := range s.attached {
		_ = w.Set(r.Key, r.Value, nil)
	}
	s.wb.Batch = nil
}

func writeChanges(w *ledgerstore.LedgerBatch, ch *ledger.Changes) {
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

// Publish puts the shard's changed accounts in the committed view.
func (s *shard) Publish(time.Time) {
	for _, a := range s.book.Changes().Accounts {
		s.l.accounts.store(a)
	}
}

// Announce adds the shard's new transfer ids to the id filter and takes
// them out of flight, once every shard shows its accounts: a reader told
// a transfer is done finds both its accounts changed. Its journal records
// so far are then in the filter, and a checkpoint may cover them.
func (s *shard) Announce() {
	ch := s.book.Changes()
	s.l.ids.add(func(yield func(string) bool) {
		for _, t := range ch.Transfers {
			if !yield(t.ID) {
				return
			}
		}
	})
	for _, t := range ch.Transfers {
		deleteIf(s.l.inflight, t.ID, s.id)
	}
	s.l.ckpt.announced[s.id].Store(s.history.next)
	if s.history.swept {
		s.history.swept = false
		s.l.ckpt.request()
	}
}

// Finish readies the Book for the next round and returns its earliest
// hold deadline.
func (s *shard) Finish() time.Time {
	s.book.Reset()
	for i := range s.outgoing {
		s.outgoing[i] = s.outgoing[i][:0]
	}
	s.routed = 0
	clear(s.outbox)
	s.outbox = s.outbox[:0]
	clear(s.attached)
	s.attached = s.attached[:0]
	return s.book.NextExpiry()
}

// lookup is the shard's Book's ledger.Lookup: what the Book needs beyond
// its own accounts.
type lookup struct{ s *shard }

func (k lookup) Transfer(id string) (ledger.Transfer, bool, error) {
	if !k.s.l.ids.mayContain(id) {
		return ledger.Transfer{}, false, nil
	}
	return k.s.l.db.Transfer(id)
}

func (k lookup) Claim(id string) bool { return !k.s.l.inflight.loadOrStore(id, k.s.id) }

func (k lookup) Release(id string) { deleteIf(k.s.l.inflight, id, k.s.id) }

// Currency is the currency of account id: the node's own accounts' first,
// then the one the applied transfer carries, then those learnt before.
func (k lookup) Currency(id string) (string, bool) {
	if c, ok := k.s.l.accounts.currency(id); ok {
		return c, true
	}
	if c := k.s.carried; c.currency != "" && c.id == id {
		return c.currency, true
	}
	return k.s.l.remote.currency(id)
}

func (k lookup) NewID() string { return uuid.Must(uuid.NewV7()).String() }
