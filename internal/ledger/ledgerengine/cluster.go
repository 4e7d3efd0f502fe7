package ledgerengine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerstore"
)

// The ledger in a cluster (internal/cluster, docs/CLUSTER.md). The node
// that owns a shard's partition runs this Ledger with Config.Cluster over
// an engine whose Committer writes its rounds to the changelog; the node that took the
// client's request sends it a Command and gets back its outcome (wire.go).
//
// With Config.Cluster a shard changes only its own accounts: the credit of
// a transfer to another shard's account is forwarded to that shard as a
// command (engine.Forwarder) owed in the debit's write, and each shard
// keeps the sums of what it forwarded and received (ledger.CreditSums), so
// that the balances and the credits in flight sum to 0. The receiver's
// currency, which the debit needs, comes with the transfer: the sending
// node checked, before the debit, that the receiver exists (accounts are
// never deleted nor change currency, so the answer stays true).

// domainErr is err as a *ledger.Error, or nil if it is none (or nil).
func domainErr(err error) *ledger.Error {
	if err == nil {
		return nil
	}
	var e *ledger.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// Submit queues cmd, a decoded wire command, on shard: the cluster node
// that owns shard's partition feeds its commands so.
func (l *Ledger) Submit(ctx context.Context, shard int, cmd engine.Command) (*engine.Call, error) {
	return l.port.Submit(ctx, shard, cmd)
}

// remoteCurrencies are the currencies of other shards' accounts, as the
// batches that name them carry them (a transfer's command carries its
// receiver's, which the shard hands the Book itself: shard.carried):
// accounts never change currency, so an answer once given stays true.
type remoteCurrencies struct{ m sync.Map }

func (r *remoteCurrencies) learn(currencies map[string]string) {
	for id, c := range currencies {
		r.learnOne(id, c)
	}
}

// learnOne notes that account id is in currency c; "" is no news. Most
// batches name receivers already known: looking it up allocates
// nothing where storing it again would box both strings and replace the
// map's entry.
func (r *remoteCurrencies) learnOne(id, c string) {
	if c == "" {
		return
	}
	if known, ok := r.m.Load(id); !ok || known.(string) != c {
		r.m.Store(id, c)
	}
}

func (r *remoteCurrencies) currency(id string) (string, bool) {
	c, ok := r.m.Load(id)
	if !ok {
		return "", false
	}
	return c.(string), true
}

// Forwards appends, in a cluster, the credits the round's debits owe other
// shards' accounts, and the steps and replies of atomic batches across
// shards (engine.Forwarder).
func (s *shard) Forwards(dst []engine.Forward) []engine.Forward {
	if !s.l.cfg.Cluster {
		return dst
	}
	dst = append(dst, s.outbox...)
	for _, leg := range s.book.Changes().Credits {
		dst = append(dst, engine.Forward{Shard: s.l.eng.ShardOf(leg.To), Cmd: &Credit{Leg: leg}})
	}
	return dst
}

// applyCluster applies the commands only a cluster's owner gets.
func (s *shard) applyCluster(c engine.Command) {
	switch c := c.(type) {
	case *Credit:
		cur := s.book.Currency(c.Leg.To)
		if cur == "" { // the sender checked the receiver: not reached
			s.l.cfg.Logger.Error("credit for an unknown account: left in flight", "account", c.Leg.To, "transfer", c.Leg.TransferID)
			return
		}
		s.book.ApplyCredit(c.Leg)
		addSum(&s.credits.Received, cur, c.Leg.Amount)
		s.creditsChanged = true
	case *ReadAccount:
		var found bool
		if c.Account, found = s.book.Account(c.ID); !found {
			c.Err = ledger.Errorf(ledger.CodeAccountNotFound, "account %s not found", c.ID)
		}
	case *GetTransfer:
		t, ok, err := s.l.db.Transfer(c.ID)
		switch {
		case err != nil:
			c.Err = err
		case !ok:
			c.Err = errTransferNotFound(c.ID)
		}
		c.Transfer = t
	case *History:
		c.Page, c.Err = s.l.History(context.Background(), c.ID, c.Query)
	case *Stats:
		c.Stats = s.stats()
	default:
		panic(fmt.Sprintf("ledgerengine: unknown command %T", c))
	}
}

// stats are the shard's totals as of the command. The credits the round's
// debits owe other shards so far are counted as sent: their sum is added
// to the shard's when the round is written (writeCredits), and the
// balances already show their debits.
func (s *shard) stats() ShardStats {
	st := ShardStats{Balances: map[string]int64{}, Credits: ledger.CreditSums{
		Sent: maps.Clone(s.credits.Sent), Received: maps.Clone(s.credits.Received),
	}}
	for _, leg := range s.book.Changes().Credits {
		addSum(&st.Credits.Sent, s.book.Currency(leg.From), leg.Amount)
	}
	for _, a := range s.book.Accounts() {
		st.Accounts++
		st.Balances[a.Currency] += a.Balance
	}
	return st
}

func addSum(m *map[string]int64, currency string, amount int64) {
	if *m == nil {
		*m = map[string]int64{}
	}
	(*m)[currency] += amount
}

// writeCredits adds the round's forwarded credits to the shard's sums and
// writes them if they changed.
func (s *shard) writeCredits(w *ledgerstore.LedgerBatch) {
	for _, leg := range s.book.Changes().Credits {
		addSum(&s.credits.Sent, s.book.Currency(leg.From), leg.Amount)
		s.creditsChanged = true
	}
	if s.creditsChanged {
		w.PutCreditSums(s.id, s.credits)
		s.creditsChanged = false
	}
}

// loadCluster reads what a cluster's shards keep beyond the single
// process's state: their credit sums, and the claims of the transfer ids
// of atomic batches prepared and not yet decided, noted with their holds.
func (l *Ledger) loadCluster() error {
	for _, s := range l.shards {
		var err error
		if s.credits, err = l.db.CreditSums(s.id); err != nil {
			return err
		}
	}
	return l.db.EachHold(func(t ledger.Transfer) error {
		if strings.HasPrefix(t.ID, ledger.AtomicPrefix) && t.Memo != "" {
			for id := range strings.SplitSeq(t.Memo, "\n") {
				l.inflight.loadOrStore(id, l.eng.ShardOf(t.From))
			}
		}
		return nil
	})
}
