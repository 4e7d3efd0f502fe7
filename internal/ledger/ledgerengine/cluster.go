package ledgerengine

import (
	"context"
	"encoding/json"
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
// an engine whose Committer is a Kafka transaction; the node that took the
// client's request sends it a WireCommand and gets back a WireOutcome.
//
// With Config.Cluster a shard changes only its own accounts: the credit of
// a transfer to another shard's account is forwarded to that shard as a
// command (engine.Forwarder) in the debit's transaction, and each shard
// keeps the sums of what it forwarded and received (ledger.CreditSums), so
// that the balances and the credits in flight sum to 0. The receiver's
// currency, which the debit needs, comes with the transfer: the sending
// node checked, before the debit, that the receiver exists (accounts are
// never deleted nor change currency, so the answer stays true).

// Wire operations.
const (
	OpCreateAccount = "create_account"
	OpTransfer      = "transfer"
	OpBatch         = "batch"
	OpCredit        = "credit"
	OpAccount       = "account"
	OpGetTransfer   = "get_transfer"
	OpHistory       = "history"
	OpStats         = "stats"
	OpPost          = "post"
	OpVoid          = "void"
)

// WireCommand is a ledger command as a cluster carries it to the owner of
// its shard.
type WireCommand struct {
	Op     string                   `json:"op"`
	ID     string                   `json:"id,omitempty"`     // account or transfer read, or posted or voided
	Amount int64                    `json:"amount,omitempty"` // to post (0: all)
	Spec   *ledger.AccountSpec      `json:"spec,omitempty"`
	Req    *ledger.TransferRequest  `json:"req,omitempty"`
	Reqs   []ledger.TransferRequest `json:"reqs,omitempty"`
	Atomic bool                     `json:"atomic,omitempty"`
	// Currencies are the receivers' currencies, checked by the sender.
	Currencies map[string]string    `json:"currencies,omitempty"`
	Credit     *ledger.CreditLeg    `json:"credit,omitempty"`
	Query      *ledger.HistoryQuery `json:"query,omitempty"`
	// Batch is an atomic batch across shards (atomic.go).
	Batch *AtomicBatch `json:"batch,omitempty"`
}

// WireOutcome is a command's outcome, back to the node that sent it. Err is
// the domain error the client hears; Fault, a server fault.
type WireOutcome struct {
	Account  *ledger.Account     `json:"account,omitempty"`
	Created  bool                `json:"created,omitempty"`
	Transfer *ledger.Transfer    `json:"transfer,omitempty"`
	Replayed bool                `json:"replayed,omitempty"`
	Results  []WireResult        `json:"results,omitempty"`
	Page     *ledger.HistoryPage `json:"page,omitempty"`
	Stats    *ShardStats         `json:"stats,omitempty"`
	Err      *ledger.Error       `json:"err,omitempty"`
	Fault    string              `json:"fault,omitempty"`
}

// WireResult is one item of a batch's outcome.
type WireResult struct {
	Transfer ledger.Transfer `json:"transfer"`
	Replayed bool            `json:"replayed,omitempty"`
	Err      *ledger.Error   `json:"err,omitempty"`
}

// ShardStats are one shard's totals: its accounts, their balances and its
// credit sums.
type ShardStats struct {
	Accounts int64             `json:"accounts"`
	Balances map[string]int64  `json:"balances"`
	Credits  ledger.CreditSums `json:"credits"`
}

// Commands only a cluster's owner applies.
type (
	// cmdCredit applies a credit another shard forwarded.
	cmdCredit struct{ leg ledger.CreditLeg }
	// cmdAccount reads an account as of the round.
	cmdAccount struct {
		id      string
		account ledger.Account
		found   bool
	}
	// cmdGetTransfer reads a transfer the shard's accounts debited.
	cmdGetTransfer struct {
		id       string
		transfer ledger.Transfer
		err      error
	}
	// cmdHistory reads a page of an account's history.
	cmdHistory struct {
		id   string
		q    ledger.HistoryQuery
		page ledger.HistoryPage
		err  error
	}
	// cmdStats reads the shard's totals.
	cmdStats struct{ stats ShardStats }
)

// Decode turns a wire command into the command its shard's owner applies.
func Decode(b []byte) (engine.Command, error) {
	if len(b) > 0 && b[0] != '{' {
		return decodeBinary(b)
	}
	var w WireCommand
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("ledgerengine: decoding a command: %w", err)
	}
	switch {
	case w.Op == OpCreateAccount && w.Spec != nil:
		return &cmdCreateAccount{spec: *w.Spec}, nil
	case w.Op == OpTransfer && w.Req != nil:
		return &cmdTransfer{req: *w.Req, currencies: w.Currencies}, nil
	case w.Op == OpBatch:
		return &cmdBatch{reqs: w.Reqs, atomic: w.Atomic, currencies: w.Currencies}, nil
	case w.Op == OpCredit && w.Credit != nil:
		return &cmdCredit{leg: *w.Credit}, nil
	case w.Op == OpAccount:
		return &cmdAccount{id: w.ID}, nil
	case w.Op == OpGetTransfer:
		return &cmdGetTransfer{id: w.ID}, nil
	case w.Op == OpHistory && w.Query != nil:
		return &cmdHistory{id: w.ID, q: *w.Query}, nil
	case w.Op == OpStats:
		return &cmdStats{}, nil
	case w.Op == OpPost:
		return &cmdPost{id: w.ID, amount: w.Amount}, nil
	case w.Op == OpVoid:
		return &cmdVoid{id: w.ID}, nil
	case (w.Op == OpAtomicPrepare || w.Op == OpAtomicCommit || w.Op == OpAtomicAbort) && w.Batch != nil && w.Batch.valid():
		return &cmdAtomic{op: w.Op, batch: *w.Batch}, nil
	}
	return nil, fmt.Errorf("ledgerengine: command %q malformed", w.Op)
}

// Outcome encodes the outcome of an applied command for its sender; nil
// for an atomic batch's step, whose outcome a later round sends (Reply).
func Outcome(cmd engine.Command) []byte {
	var o WireOutcome
	switch c := cmd.(type) {
	case *cmdAtomic:
		return nil
	case *cmdCreateAccount:
		o.Account, o.Created = &c.account, c.created
		setErr(&o, c.err)
	case *cmdTransfer:
		if c.binary {
			return encodeTransferOutcome(&c.transfer, c.replayed, c.err)
		}
		o.Transfer, o.Replayed = &c.transfer, c.replayed
		setErr(&o, c.err)
	case *cmdPost:
		o.Transfer = &c.transfer
		setErr(&o, c.err)
	case *cmdVoid:
		o.Transfer = &c.transfer
		setErr(&o, c.err)
	case *cmdBatch:
		o.Results = make([]WireResult, len(c.results))
		for i, r := range c.results {
			o.Results[i] = WireResult{Transfer: r.Transfer, Replayed: r.Replayed, Err: domainErr(r.Err)}
		}
	case *cmdAccount:
		if c.found {
			o.Account = &c.account
		} else {
			o.Err = ledger.Errorf(ledger.CodeAccountNotFound, "account %s not found", c.id)
		}
	case *cmdGetTransfer:
		o.Transfer = &c.transfer
		setErr(&o, c.err)
	case *cmdHistory:
		o.Page = &c.page
		setErr(&o, c.err)
	case *cmdStats:
		o.Stats = &c.stats
	}
	return encodeOutcome(&o)
}

func encodeOutcome(o *WireOutcome) []byte {
	b, err := json.Marshal(o)
	if err != nil {
		b, _ = json.Marshal(&WireOutcome{Fault: err.Error()})
	}
	return b
}

func setErr(o *WireOutcome, err error) {
	if err == nil {
		return
	}
	if e := domainErr(err); e != nil {
		o.Err = e
		return
	}
	o.Fault = err.Error()
}

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
// commands that name them carry them: accounts never change currency, so
// an answer once given stays true.
type remoteCurrencies struct{ m sync.Map }

func (r *remoteCurrencies) learn(currencies map[string]string) {
	for id, c := range currencies {
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

// Encode encodes a command a shard forwards (engine.Forward) for the
// receiving shard's partition.
func Encode(cmd engine.Command) ([]byte, error) {
	switch c := cmd.(type) {
	case *cmdCredit:
		return encodeCredit(&c.leg), nil
	case *cmdAtomic:
		return json.Marshal(&WireCommand{Op: c.op, Batch: &c.batch})
	}
	return nil, fmt.Errorf("ledgerengine: %T is not forwarded", cmd)
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
		dst = append(dst, engine.Forward{Shard: s.l.eng.ShardOf(leg.To), Cmd: &cmdCredit{leg: leg}})
	}
	return dst
}

// applyCluster applies the commands only a cluster's owner gets.
func (s *shard) applyCluster(c engine.Command) {
	switch c := c.(type) {
	case *cmdCredit:
		cur := s.book.Currency(c.leg.To)
		if cur == "" { // the sender checked the receiver: not reached
			s.l.cfg.Logger.Error("credit for an unknown account: left in flight", "account", c.leg.To, "transfer", c.leg.TransferID)
			return
		}
		s.book.ApplyCredit(c.leg)
		addSum(&s.credits.Received, cur, c.leg.Amount)
		s.creditsChanged = true
	case *cmdAccount:
		c.account, c.found = s.book.Account(c.id)
	case *cmdGetTransfer:
		t, ok, err := s.l.db.Transfer(c.id)
		switch {
		case err != nil:
			c.err = err
		case !ok:
			c.err = errTransferNotFound(c.id)
		}
		c.transfer = t
	case *cmdHistory:
		c.page, c.err = s.l.History(context.Background(), c.id, c.q)
	case *cmdStats:
		c.stats = s.stats()
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
