package ledgerengine

import (
	"context"
	"time"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
)

// The ledger's API. Writes go through the owning shard and return once
// durable; reads are served from durable state without queueing.

// do queues cmd on shard and waits for the round that applies it.
func (l *Ledger) do(ctx context.Context, shard int, cmd engine.Command) error {
	return QueueError(l.port.Do(ctx, shard, cmd))
}

// CreateAccount opens an account; created is false when an identical one
// existed.
func (l *Ledger) CreateAccount(ctx context.Context, spec ledger.AccountSpec) (ledger.Account, bool, error) {
	c := &CreateAccount{Spec: spec}
	if err := l.do(ctx, l.eng.ShardOf(spec.ID), c); err != nil {
		return ledger.Account{}, false, err
	}
	return c.Account, c.Created, c.Err
}

// Account returns the account id as of its last durable change.
func (l *Ledger) Account(_ context.Context, id string) (ledger.Account, error) {
	a, ok := l.account(id)
	if !ok {
		return ledger.Account{}, ledger.Errorf(ledger.CodeAccountNotFound, "account %s not found", id)
	}
	return a, nil
}

// Transfer moves money; it returns once the transfer is durable on both
// accounts' shards.
func (l *Ledger) Transfer(ctx context.Context, req ledger.TransferRequest) (ledger.Transfer, bool, error) {
	return l.TransferWith(ctx, req, nil)
}

// TransferWith is Transfer that also writes the attached records in the
// same storage batch as the transfer if the call makes it anew (see
// cmdTransfer).
func (l *Ledger) TransferWith(ctx context.Context, req ledger.TransferRequest, attached []store.Record) (ledger.Transfer, bool, error) {
	c := &Transfer{Req: req, attached: attached}
	if err := l.do(ctx, l.eng.ShardOf(req.From), c); err != nil {
		return ledger.Transfer{}, false, err
	}
	return c.Transfer, c.Replayed, c.Err
}

// TransferBatch applies reqs, each debiting shard applying its share as one
// command. An atomic batch whose debits span shards runs with every shard
// parked, in one round.
func (l *Ledger) TransferBatch(ctx context.Context, reqs []ledger.TransferRequest, atomic bool) ([]ledger.BatchResult, error) {
	groups := l.groupByShard(reqs)
	if atomic && len(groups) > 1 {
		return l.atomicAcrossShards(ctx, groups, reqs)
	}
	return l.queueBatch(ctx, groups, atomic).results(ctx, reqs)
}

// queuedBatch is a batch handed to its debiting shards: a call for each
// group queued, and the reason the rest were refused.
type queuedBatch struct {
	groups  []shardGroup
	cmds    []*Batch
	calls   []*engine.Call
	refused error
}

// queueBatch queues each group on its shard, in order, until one refuses.
func (l *Ledger) queueBatch(ctx context.Context, groups []shardGroup, atomic bool) queuedBatch {
	q := queuedBatch{groups: groups, cmds: make([]*Batch, 0, len(groups)), calls: make([]*engine.Call, 0, len(groups))}
	for _, g := range groups {
		cmd := &Batch{Reqs: g.reqs, Atomic: atomic}
		c, err := l.port.Submit(ctx, g.shard, cmd)
		if err != nil {
			q.refused = QueueError(err)
			break
		}
		q.cmds, q.calls = append(q.cmds, cmd), append(q.calls, c)
	}
	return q
}

// results waits for the queued groups and reports each item of reqs: groups
// already queued run whatever happens next, so they report their real
// outcome, and the groups never queued the refusal.
func (q queuedBatch) results(ctx context.Context, reqs []ledger.TransferRequest) ([]ledger.BatchResult, error) {
	out := make([]ledger.BatchResult, len(reqs))
	for i, c := range q.calls {
		if err := c.Wait(ctx); err != nil {
			return nil, QueueError(err)
		}
		for j, r := range q.cmds[i].Results {
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
func (l *Ledger) atomicAcrossShards(ctx context.Context, groups []shardGroup, reqs []ledger.TransferRequest) ([]ledger.BatchResult, error) {
	var res []ledger.BatchResult
	c, err := l.port.Exclusive(ctx, func(now time.Time) { res = l.applyAtomicAcross(reqs, now) })
	if err != nil {
		return queuedBatch{groups: groups, refused: QueueError(err)}.results(ctx, reqs)
	}
	if err := c.Wait(ctx); err != nil {
		return nil, QueueError(err)
	}
	return res, nil
}

type shardGroup struct {
	shard int
	reqs  []ledger.TransferRequest
	index []int // positions in the original batch
}

// groupByShard splits reqs by debiting shard, keeping their order within
// each group. It counts first, so that each group is allocated once at its
// size: grown by appending, the groups of a batch of 8,190 were copied a
// dozen times.
func (l *Ledger) groupByShard(reqs []ledger.TransferRequest) []shardGroup {
	of := make([]int, len(reqs)) // shard index of each request
	counts := make([]int, len(l.shards))
	for i := range reqs {
		of[i] = l.eng.ShardOf(reqs[i].From)
		counts[of[i]]++
	}
	groups := make([]shardGroup, 0, len(l.shards))
	pos := make([]int, len(l.shards)) // group index of each shard with requests
	for n, c := range counts {
		if c > 0 {
			pos[n] = len(groups)
			groups = append(groups, shardGroup{shard: n, reqs: make([]ledger.TransferRequest, 0, c), index: make([]int, 0, c)})
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
func (l *Ledger) PostPending(ctx context.Context, id string, amount int64) (ledger.Transfer, error) {
	s, err := l.holdShard(ctx, id)
	if err != nil {
		return ledger.Transfer{}, err
	}
	c := &Post{ID: id, Amount: amount}
	if err := l.do(ctx, s, c); err != nil {
		return ledger.Transfer{}, err
	}
	return c.Transfer, c.Err
}

// VoidPending releases a pending transfer's hold.
func (l *Ledger) VoidPending(ctx context.Context, id string) (ledger.Transfer, error) {
	s, err := l.holdShard(ctx, id)
	if err != nil {
		return ledger.Transfer{}, err
	}
	c := &Void{ID: id}
	if err := l.do(ctx, s, c); err != nil {
		return ledger.Transfer{}, err
	}
	return c.Transfer, c.Err
}

// holdShard finds the shard owning transfer id: its debiting account's.
func (l *Ledger) holdShard(ctx context.Context, id string) (int, error) {
	t, err := l.GetTransfer(ctx, id)
	if err != nil {
		return 0, err
	}
	return l.eng.ShardOf(t.From), nil
}

// GetTransfer returns the transfer id as of its last durable change. If a
// batch writing it is in flight, it waits for that batch to be published.
// An id the filter has never seen is answered without touching storage: a
// transfer enters the filter when its first batch is published, before any
// reply names it.
func (l *Ledger) GetTransfer(ctx context.Context, id string) (ledger.Transfer, error) {
	if !l.ids.mayContain(id) {
		return ledger.Transfer{}, errTransferNotFound(id)
	}
	for {
		// Take the signal before looking: a publish that clears the id
		// after this point also closes next.
		next := l.eng.Published()
		t, ok, err := l.db.Transfer(id)
		if err != nil {
			return ledger.Transfer{}, err
		}
		if !ok {
			return ledger.Transfer{}, errTransferNotFound(id)
		}
		if _, busy := l.inflight.load(id); !busy {
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
func (l *Ledger) History(_ context.Context, accountID string, q ledger.HistoryQuery) (ledger.HistoryPage, error) {
	a, ok := l.account(accountID)
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
	entries, err := l.historyPage(&a, before, limit)
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
func (l *Ledger) historyPage(a *ledger.Account, before uint64, limit int) ([]ledger.Entry, error) {
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
	rest, err := l.storedHistory(a.ID, before, limit-len(out), before == stored+1)
	return append(out, rest...), err
}

// storedHistory reads entries of account with seq < before, up to limit,
// from the history cache or storage; newest says before is one past the
// newest entry in storage's chunks.
func (l *Ledger) storedHistory(account string, before uint64, limit int, newest bool) ([]ledger.Entry, error) {
	lo := before - min(before-1, uint64(limit))
	if entries, ok := l.history.page(account, lo, before); ok {
		return entries, nil
	}
	entries, err := l.db.History(account, before, limit)
	if err == nil && newest {
		l.history.keep(account, entries)
	}
	return entries, err
}

// Stats sums the committed view. It is a consistent cut: every balance as
// of the same set of durable rounds.
func (l *Ledger) Stats(context.Context) (ledger.Stats, error) {
	st := ledger.Stats{BalanceSum: map[string]int64{}}
	l.eng.Consistent(func() {
		l.accounts.each(func(a *ledger.Account) {
			st.Accounts++
			st.BalanceSum[a.Currency] += a.Balance
		})
	})
	return st, nil
}

// applyAtomicAcross applies an atomic batch whose debits span shards: the
// items in order over all Books, crediting receivers at once so that later
// items see it, and all rolled back if one fails.
func (l *Ledger) applyAtomicAcross(reqs []ledger.TransferRequest, now time.Time) []ledger.BatchResult {
	saves := make([]ledger.Savepoint, len(l.shards))
	for i, s := range l.shards {
		saves[i] = s.book.Begin()
	}
	res, failed := l.applyAcross(reqs, now)
	for i, s := range l.shards {
		if failed {
			s.book.Rollback(saves[i])
		} else {
			s.book.Commit()
		}
	}
	return res
}

func (l *Ledger) applyAcross(reqs []ledger.TransferRequest, now time.Time) ([]ledger.BatchResult, bool) {
	res := make([]ledger.BatchResult, len(reqs))
	for i, r := range reqs {
		from := l.shardFor(r.From).book
		mark := len(from.Changes().Credits)
		t, replayed, err := from.Transfer(r, now)
		if err != nil {
			return ledger.AbortedBatch(reqs, i, err), true
		}
		res[i] = ledger.BatchResult{Transfer: t, Replayed: replayed}
		for _, leg := range from.Changes().Credits[mark:] {
			l.shardFor(leg.To).book.ApplyCredit(leg)
		}
	}
	return res, false
}
