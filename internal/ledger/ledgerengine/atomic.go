package ledgerengine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
)

// An atomic batch across a cluster's shards (docs/CLUSTER.md, "Atomic
// batches across partitions"). The batch travels as one command along a
// chain of the shards its items touch (AtomicBatch.Chain), each forwarding
// it to the next, owed in its round's write:
//
//   - prepare: each shard evaluates its steps in batch order — its items'
//     debits and the credits other shards' items owe its accounts — inside
//     an atomic group it then rolls back, so nothing shows; if they all
//     succeed it reserves what they need (holds, Book.Reserve, and the
//     claims of its items' ids) and notes its items' results;
//   - the chain's last shard decides: abort if an item failed (each shard
//     reserved nothing once one before it failed), commit otherwise; it
//     forwards the decision to the shards and the reply to the client in
//     one transaction;
//   - commit: each shard releases its holds and applies its steps at the
//     time it prepared, which succeeds as the prepare did, since its holds
//     kept what the steps need; the credits between the batch's shards are
//     applied by the receiving shard's commit, not forwarded, and counted
//     in the credit sums as a forwarded credit is; abort releases the holds.
//
// A shard that prepares before the shard debiting an item that credits it
// does not know yet whether that item is a replay (which moves nothing) and
// counts its credit; if one was, the last shard starts the batch over with
// the replays known (Attempt+1), after aborting the first attempt's holds.

// AtomicBatch is an atomic batch across shards as it travels between them.
type AtomicBatch struct {
	// ID names the batch; with Attempt, its holds.
	ID      string
	Attempt int
	// Reqs are the items, each with an id (the sender chose those a client
	// left empty), and Currencies their receivers'.
	Reqs       []ledger.TransferRequest
	Currencies map[string]string
	// Chain are the shards the items touch, in the order they prepare;
	// Step is the place of the shard a prepare goes to.
	Chain []int
	Step  int
	// ReplyTo is the reply address of the client's command (SetReplyTo).
	ReplyTo []byte
	// EvalOnly batches are only evaluated and never commit: the sender
	// refused an item after Reqs, and asks whether one of Reqs fails first.
	EvalOnly bool
	// Results are the items' outcomes as their shards prepared them, Nows
	// the time each step prepared at, and Failed the first item that
	// failed (-1: none yet), with Err.
	Results []WireResult
	Nows    []time.Time
	Failed  int
	Err     *ledger.Error
	// Reserved are the steps that hold reservations; Skip, the items known
	// to be replays when the attempt began.
	Reserved []int
	Skip     []int
}

// Reply is a reply a shard owes a client whose command an earlier round
// took: an atomic batch's outcome, sent by the shard that decided it. A
// cluster's Committer sends it to To, the address SetReplyTo gave the
// batch's first command, with Value, the encoded outcome (EncodeOutcome).
type Reply struct {
	To    []byte
	Value []byte
}

// SetReplyTo gives cmd, a decoded wire command, the reply address of the
// client's command that carried it. Only an atomic batch's first step keeps
// it, for the reply that a later round sends; every other command is
// answered when its own round commits.
func SetReplyTo(cmd engine.Command, to []byte) {
	if c, ok := cmd.(*Atomic); ok && c.Step == OpAtomicPrepare && c.Batch.ReplyTo == nil {
		c.Batch.ReplyTo = to
	}
}

// shardOf is the shard of the account id.
func (s *shard) shardOf(id string) int { return s.l.eng.ShardOf(id) }

// applyAtomic applies a step of an atomic batch at the round's time now.
func (s *shard) applyAtomic(c *Atomic, now time.Time) {
	b := &c.Batch
	// A commit may come to an owner that did not see the prepare: the
	// receivers' currencies come again with every step.
	s.l.remote.learn(b.Currencies)
	switch c.Step {
	case OpAtomicPrepare:
		s.prepareAtomic(b, now)
		s.forwardAtomic(b)
	case OpAtomicCommit:
		if s.releaseAtomic(b, now) {
			s.commitAtomic(b)
		}
	case OpAtomicAbort:
		s.releaseAtomic(b, now)
	}
}

// skipped reports whether item i is known to be a replay: its credit moves
// nothing.
func (b *AtomicBatch) skipped(i int) bool {
	return slices.Contains(b.Skip, i) || b.Results[i].Transfer.ID != "" && b.Results[i].Replayed
}

// limit is how many of the items matter: those before the first failure.
func (b *AtomicBatch) limit() int {
	if b.Failed >= 0 {
		return b.Failed
	}
	return len(b.Reqs)
}

// prepareAtomic evaluates the shard's steps and, if they succeed and no
// item failed before, reserves what they need.
func (s *shard) prepareAtomic(b *AtomicBatch, now time.Time) {
	b.Nows[b.Step] = now
	start := map[string]int64{} // debited account → available before the steps
	need := map[string]int64{}  // debited account → most the steps took from it at once
	var debited []string
	for _, r := range b.Reqs[:b.limit()] {
		if _, seen := start[r.From]; !seen && s.shardOf(r.From) == s.id {
			start[r.From], debited = s.available(r.From), append(debited, r.From)
		}
	}
	sp := s.book.Begin()
	failed, err := -1, error(nil)
	for i, r := range b.Reqs[:b.limit()] {
		switch {
		case s.shardOf(r.From) == s.id:
			var res WireResult
			if res.Transfer, res.Replayed, err = s.book.Transfer(r, now); err != nil {
				failed = i
				break
			}
			b.Results[i] = res
			need[r.From] = max(need[r.From], start[r.From]-s.available(r.From))
		case s.creditedBy(r) && !b.skipped(i):
			s.book.ApplyCredit(creditOf(r, now))
		}
		if failed >= 0 {
			break
		}
	}
	s.book.Rollback(sp)
	switch {
	case failed >= 0:
		b.Failed, b.Err = failed, domainErr(err)
	case b.Failed < 0 && !b.EvalOnly:
		s.reserveAtomic(b, debited, need, now)
	}
}

// available is what account id, the shard's, holds beyond its holds.
func (s *shard) available(id string) int64 {
	a, _ := s.book.Account(id)
	return a.Available()
}

// creditedBy reports whether item r, of another shard, credits the shard: a
// pending item moves nothing until it is posted.
func (s *shard) creditedBy(r ledger.TransferRequest) bool {
	return s.shardOf(r.To) == s.id && !r.Pending
}

func creditOf(r ledger.TransferRequest, at time.Time) ledger.CreditLeg {
	return ledger.CreditLeg{TransferID: r.ID, From: r.From, To: r.To, Amount: r.Amount, Memo: r.Memo, At: at}
}

// reserveAtomic claims the ids of the shard's new items and holds, on each
// account they debit, the most the steps took from it at once; a shard that
// only receives holds nothing on its first credited account, so that its
// commit finds a hold. An id another shard claimed since the evaluation
// fails its item.
func (s *shard) reserveAtomic(b *AtomicBatch, debited []string, need map[string]int64, now time.Time) {
	ids := map[string][]string{}
	for i, r := range b.Reqs {
		if s.shardOf(r.From) != s.id || b.Results[i].Replayed {
			continue
		}
		if !(lookup{s}).Claim(r.ID) {
			s.releaseClaims(ids)
			b.Failed, b.Err = i, ledger.Errorf(ledger.CodeIdempotencyConflict, "transfer %s is being created with another body", r.ID)
			return
		}
		ids[r.From] = append(ids[r.From], r.ID)
	}
	if len(debited) == 0 {
		debited = []string{s.firstCredited(b)}
	}
	for n, acct := range debited {
		if err := s.book.Reserve(s.holdID(b, n), acct, need[acct], strings.Join(ids[acct], "\n"), now); err != nil {
			s.l.cfg.Logger.Error("atomic batch: reserving", "batch", b.ID, "err", err)
		}
	}
	b.Reserved = append(b.Reserved, b.Step)
}

func (s *shard) releaseClaims(ids map[string][]string) {
	for _, list := range ids {
		for _, id := range list {
			lookup{s}.Release(id)
		}
	}
}

// firstCredited is the first account of the shard the batch credits.
func (s *shard) firstCredited(b *AtomicBatch) string {
	for _, r := range b.Reqs {
		if s.shardOf(r.To) == s.id {
			return r.To
		}
	}
	return ""
}

// holdID names the batch's n-th hold on the shard: ids are the same
// namespace on every shard.
func (s *shard) holdID(b *AtomicBatch, n int) string {
	return fmt.Sprintf("%s%s.%d.%d.%d", ledger.AtomicPrefix, b.ID, b.Attempt, s.id, n)
}

// forwardAtomic sends a prepared batch to the next shard of its chain;
// the last decides.
func (s *shard) forwardAtomic(b *AtomicBatch) {
	if b.Step+1 < len(b.Chain) {
		next := *b
		next.Step++
		s.forward(b.Chain[next.Step], OpAtomicPrepare, next)
		return
	}
	s.decideAtomic(b)
}

// decideAtomic forwards the decision on a batch every shard prepared to
// the shards, and its outcome to the client, or starts it over.
func (s *shard) decideAtomic(b *AtomicBatch) {
	if again, ok := s.again(b); ok {
		s.abortReserved(b)
		s.forward(b.Chain[0], OpAtomicPrepare, again)
		return
	}
	results := b.Results
	switch {
	case b.Failed >= 0:
		s.abortReserved(b)
		results = make([]WireResult, len(b.Reqs))
		for i, r := range ledger.AbortedBatch(b.Reqs, b.Failed, b.Err) {
			results[i] = WireResult{Transfer: r.Transfer, Err: domainErr(r.Err)}
		}
	case !b.EvalOnly:
		for _, p := range b.Chain {
			s.forward(p, OpAtomicCommit, *b)
		}
	}
	s.outbox = append(s.outbox, engine.Forward{Cmd: &Reply{To: b.ReplyTo, Value: EncodeOutcome(&Atomic{Step: OpAtomicPrepare, Results: results})}})
}

func (s *shard) abortReserved(b *AtomicBatch) {
	for _, step := range b.Reserved {
		s.forward(b.Chain[step], OpAtomicAbort, *b)
	}
}

func (s *shard) forward(shard int, step Op, b AtomicBatch) {
	s.outbox = append(s.outbox, engine.Forward{Shard: shard, Cmd: &Atomic{Step: step, Batch: b}})
}

// again is the batch's next attempt if a shard counted the credit of an
// item that turned out a replay, having prepared before the item's debit:
// the next attempt knows every replay found.
func (s *shard) again(b *AtomicBatch) (AtomicBatch, bool) {
	step := func(account string) int { return slices.Index(b.Chain, s.shardOf(account)) }
	var skip []int
	wrong := false
	for i, res := range b.Results {
		if res.Transfer.ID == "" || !res.Replayed {
			continue
		}
		skip = append(skip, i)
		wrong = wrong || !slices.Contains(b.Skip, i) && step(b.Reqs[i].To) < step(b.Reqs[i].From)
	}
	if !wrong {
		return AtomicBatch{}, false
	}
	next := *b
	next.Attempt++
	next.Step, next.Failed, next.Err, next.Reserved, next.Skip = 0, -1, nil, nil, skip
	next.Results, next.Nows = make([]WireResult, len(b.Reqs)), make([]time.Time, len(b.Chain))
	return next, true
}

// releaseAtomic releases the shard's holds and claims of the batch's
// attempt, and reports whether it held them: a commit or abort of a batch
// the shard holds nothing for is a replay, and does nothing.
func (s *shard) releaseAtomic(b *AtomicBatch, now time.Time) bool {
	if !s.book.Reserved(s.holdID(b, 0)) {
		return false
	}
	for n := 0; s.book.Reserved(s.holdID(b, n)); n++ {
		s.book.Unreserve(s.holdID(b, n), now)
	}
	for i, r := range b.Reqs {
		if s.shardOf(r.From) == s.id && !b.Results[i].Replayed {
			lookup{s}.Release(r.ID)
		}
	}
	return true
}

// commitAtomic applies the shard's steps of a committed batch at the time
// it prepared them. The credits between the batch's shards are applied by
// the receiver's commit: the sender's are counted as forwarded, not
// forwarded.
func (s *shard) commitAtomic(b *AtomicBatch) {
	at := func(shard int) time.Time { return b.Nows[slices.Index(b.Chain, shard)] }
	ch := s.book.Changes()
	mark := len(ch.Credits)
	for i, r := range b.Reqs {
		from := s.shardOf(r.From)
		switch {
		case from == s.id:
			if _, _, err := s.book.Transfer(r, at(s.id)); err != nil {
				s.l.cfg.Logger.Error("atomic batch: an item prepared fails on commit", "batch", b.ID, "transfer", r.ID, "err", err)
			}
		case s.creditedBy(r) && !b.Results[i].Replayed:
			s.book.ApplyCredit(creditOf(r, at(from)))
			addSum(&s.credits.Received, s.book.Currency(r.To), r.Amount)
			s.creditsChanged = true
		}
	}
	for _, leg := range ch.Credits[mark:] {
		addSum(&s.credits.Sent, s.book.Currency(leg.From), leg.Amount)
		s.creditsChanged = true
	}
	ch.Credits = ch.Credits[:mark]
}

// valid reports whether the batch's parts agree in length, so that its
// steps can index them.
func (b *AtomicBatch) valid() bool {
	return len(b.Results) == len(b.Reqs) && len(b.Nows) == len(b.Chain) && b.Step >= 0 && b.Step < len(b.Chain) &&
		b.Failed >= -1 && b.Failed < len(b.Reqs)
}
