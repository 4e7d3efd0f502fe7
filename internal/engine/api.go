package engine

import (
	"context"
	"time"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
)

// The Engine's ledger API. Writes go through the owning shard and return
// once durable; reads are served from durable state without queueing.

// wait blocks until c completes or ctx ends. The command goes on even if
// the caller gives up: it is already in the shard's log.
func wait(ctx context.Context, c *call) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) do(ctx context.Context, s *shard, cmd Command) (*call, error) {
	c, err := e.submit(ctx, s, cmd)
	if err != nil {
		return nil, err
	}
	if err := wait(ctx, c); err != nil {
		return nil, err
	}
	return c, c.err
}

// CreateAccount opens an account; created is false when an identical one
// existed.
func (e *Engine) CreateAccount(ctx context.Context, spec ledger.AccountSpec) (ledger.Account, bool, error) {
	c, err := e.do(ctx, e.shardFor(spec.ID), CmdCreateAccount{Spec: spec})
	if err != nil {
		return ledger.Account{}, false, err
	}
	return c.account, c.flag, nil
}

// Account returns the account id as of its last durable change.
func (e *Engine) Account(_ context.Context, id string) (ledger.Account, error) {
	a, ok := e.account(id)
	if !ok {
		return ledger.Account{}, ledger.Errorf(ledger.CodeAccountNotFound, "account %s not found", id)
	}
	return a, nil
}

// Transfer moves money; it returns once the transfer is durable on both
// accounts' shards.
func (e *Engine) Transfer(ctx context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error) {
	return e.TransferWith(ctx, req, nil)
}

// TransferWith is Transfer that also writes the attached records in the
// same storage batch as the transfer if the call makes it anew (see
// CmdTransfer).
func (e *Engine) TransferWith(ctx context.Context, req ledger.TransferRequest, attached []store.Record) (ledger.Transfer, bool, error) {
	c, err := e.do(ctx, e.shardFor(req.From), CmdTransfer{Req: req, Attached: attached})
	if err != nil {
		return ledger.Transfer{}, false, err
	}
	return c.transfer, c.flag, nil
}

// TransferBatch applies reqs, each debiting shard applying its share as one
// command. An atomic batch whose debits span shards runs with every shard
// parked, in one round.
func (e *Engine) TransferBatch(ctx context.Context, reqs []ledger.TransferRequest, atomic bool) ([]ledger.BatchResult, error) {
	groups := e.groupByShard(reqs)
	if atomic && len(groups) > 1 {
		return e.atomicAcrossShards(ctx, groups, reqs)
	}
	return e.queueBatch(ctx, groups, atomic).results(ctx, reqs)
}

// queuedBatch is a batch handed to its debiting shards: a call for each
// group queued, and the reason the rest were refused.
type queuedBatch struct {
	groups  []shardGroup
	calls   []*call
	refused error
}

// queueBatch queues each group on its shard, in order, until one refuses.
func (e *Engine) queueBatch(ctx context.Context, groups []shardGroup, atomic bool) queuedBatch {
	q := queuedBatch{groups: groups, calls: make([]*call, 0, len(groups))}
	for _, g := range groups {
		c, err := e.submit(ctx, g.shard, CmdBatch{Reqs: g.reqs, Atomic: atomic})
		if err != nil {
			q.refused = err
			break
		}
		q.calls = append(q.calls, c)
	}
	return q
}

// results waits for the queued groups and reports each item of reqs: groups
// already queued run whatever happens next, so they report their real
// outcome, and the groups never queued the refusal.
func (q queuedBatch) results(ctx context.Context, reqs []ledger.TransferRequest) ([]ledger.BatchResult, error) {
	out := make([]ledger.BatchResult, len(reqs))
	for i, c := range q.calls {
		if err := wait(ctx, c); err != nil {
			return nil, err
		}
		if c.err != nil {
			return nil, c.err
		}
		for j, r := range c.batch {
			out[q.groups[i].index[j]] = r
		}
	}
	for _, g := range q.groups[len(q.calls):] {
		for _, i := range g.index {
			out[i] = ledger.BatchResult{Transfer: ledger.Transfer{ID: reqs[i].ID}, Err: q.refused}
		}
	}
	return out, nil
}

// atomicAcrossShards applies an atomic batch whose debits span shards in
// one round, with every shard's Book at hand: all or nothing, in memory and
// on disk, since the round is one storage batch.
func (e *Engine) atomicAcrossShards(ctx context.Context, groups []shardGroup, reqs []ledger.TransferRequest) ([]ledger.BatchResult, error) {
	c, err := e.enqueue(ctx, e.exclusive, cmdExclusive{run: func(c *call, now time.Time) {
		c.batch = e.applyAtomicAcross(reqs, now)
	}})
	if err != nil {
		return queuedBatch{groups: groups, refused: err}.results(ctx, reqs)
	}
	if err := wait(ctx, c); err != nil {
		return nil, err
	}
	return c.batch, c.err
}

type shardGroup struct {
	shard *shard
	reqs  []ledger.TransferRequest
	index []int // positions in the original batch
}

// groupByShard splits reqs by debiting shard, keeping their order within
// each group. It counts first, so that each group is allocated once at its
// size: grown by appending, the groups of a batch of 8,190 were copied a
// dozen times.
func (e *Engine) groupByShard(reqs []ledger.TransferRequest) []shardGroup {
	of := make([]int, len(reqs)) // shard index of each request
	counts := make([]int, len(e.shards))
	for i := range reqs {
		of[i] = e.shardIndex(reqs[i].From)
		counts[of[i]]++
	}
	groups := make([]shardGroup, 0, len(e.shards))
	pos := make([]int, len(e.shards)) // group index of each shard with requests
	for n, c := range counts {
		if c > 0 {
			pos[n] = len(groups)
			groups = append(groups, shardGroup{shard: e.shards[n], reqs: make([]ledger.TransferRequest, 0, c), index: make([]int, 0, c)})
		}
	}
	for i, n := range of {
		g := &groups[pos[n]]
		g.reqs = append(g.reqs, reqs[i])
		g.index = append(g.index, i)
	}
	return groups
}

// PostPending posts a pending transfer; amount 0 posts all it holds.
func (e *Engine) PostPending(ctx context.Context, id string, amount int64) (ledger.Transfer, error) {
	s, err := e.holdShard(ctx, id)
	if err != nil {
		return ledger.Transfer{}, err
	}
	c, err := e.do(ctx, s, CmdPost{ID: id, Amount: amount})
	if err != nil {
		return ledger.Transfer{}, err
	}
	return c.transfer, nil
}

// VoidPending releases a pending transfer's hold.
func (e *Engine) VoidPending(ctx context.Context, id string) (ledger.Transfer, error) {
	s, err := e.holdShard(ctx, id)
	if err != nil {
		return ledger.Transfer{}, err
	}
	c, err := e.do(ctx, s, CmdVoid{ID: id})
	if err != nil {
		return ledger.Transfer{}, err
	}
	return c.transfer, nil
}

// holdShard finds the shard owning transfer id: its debiting account's.
func (e *Engine) holdShard(ctx context.Context, id string) (*shard, error) {
	t, err := e.GetTransfer(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.shardFor(t.From), nil
}

// GetTransfer returns the transfer id as of its last durable change. If a
// batch writing it is in flight, it waits for that batch to be published.
// An id the filter has never seen is answered without touching storage: a
// transfer enters the filter when its first batch is published, before any
// reply names it.
func (e *Engine) GetTransfer(ctx context.Context, id string) (ledger.Transfer, error) {
	if !e.ids.mayContain(id) {
		return ledger.Transfer{}, errTransferNotFound(id)
	}
	for {
		// Take the signal before looking: a publish that clears the id
		// after this point also closes next.
		next := *e.published.Load()
		t, ok, err := e.db.Transfer(id)
		if err != nil {
			return ledger.Transfer{}, err
		}
		if !ok {
			return ledger.Transfer{}, errTransferNotFound(id)
		}
		if _, busy := e.inflight.load(id); !busy {
			return t, nil
		}
		select {
		case <-next:
		case <-ctx.Done():
			return ledger.Transfer{}, ctx.Err()
		}
	}
}

func errTransferNotFound(id string) error {
	return ledger.Errorf(ledger.CodeTransferNotFound, "transfer %s not found", id)
}

// History returns a page of an account's history, newest first.
func (e *Engine) History(_ context.Context, accountID string, q ledger.HistoryQuery) (ledger.HistoryPage, error) {
	a, ok := e.account(accountID)
	if !ok {
		return ledger.HistoryPage{}, ledger.Errorf(ledger.CodeAccountNotFound, "account %s not found", accountID)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = ledger.DefaultPageSize
	}
	limit = min(limit, ledger.MaxPageSize)
	// Entries are numbered 1..a.Entries; read those below "before".
	before := a.Entries + 1
	switch {
	case q.Cursor > 0:
		before = min(q.Cursor, before)
	case q.Offset >= a.Entries:
		return ledger.HistoryPage{}, nil
	default:
		before -= q.Offset
	}
	entries, err := e.historyPage(&a, before, limit)
	if err != nil {
		return ledger.HistoryPage{}, err
	}
	page := ledger.HistoryPage{Entries: entries}
	if n := len(entries); n == limit && entries[n-1].Seq > 1 {
		page.NextCursor = entries[n-1].Seq
	}
	return page, nil
}

// historyPage reads the entries of a with seq < before, up to limit,
// newest first: those in a.Recent from there, the older ones from the
// history cache or storage.
func (e *Engine) historyPage(a *ledger.Account, before uint64, limit int) ([]ledger.Entry, error) {
	if before <= 1 {
		return nil, nil
	}
	stored := a.Entries - uint64(a.Recent.Len()) // 1..stored are in chunks
	var out []ledger.Entry
	if before > stored+1 {
		out = make([]ledger.Entry, 0, min(uint64(limit), before-1-stored))
		out = a.Recent.AppendNewest(out, stored+1, before, limit)
		if len(out) == limit || stored == 0 {
			return out, nil
		}
		before = stored + 1
	}
	rest, err := e.storedHistory(a.ID, before, limit-len(out), before == stored+1)
	return append(out, rest...), err
}

// storedHistory reads entries of account with seq < before, up to limit,
// from the history cache or storage; newest says before is one past the
// newest entry in storage's chunks.
func (e *Engine) storedHistory(account string, before uint64, limit int, newest bool) ([]ledger.Entry, error) {
	lo := before - min(before-1, uint64(limit))
	if entries, ok := e.history.page(account, lo, before); ok {
		return entries, nil
	}
	entries, err := e.db.History(account, before, limit)
	if err == nil && newest {
		e.history.keep(account, entries)
	}
	return entries, err
}

// Stats sums the committed view. It is a consistent cut: every balance as
// of the same set of durable rounds.
func (e *Engine) Stats(context.Context) (ledger.Stats, error) {
	st := ledger.Stats{BalanceSum: map[string]int64{}}
	e.viewMu.Lock()
	defer e.viewMu.Unlock()
	e.accounts.each(func(a *ledger.Account) {
		st.Accounts++
		st.BalanceSum[a.Currency] += a.Balance
	})
	return st, nil
}
