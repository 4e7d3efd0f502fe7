package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Owner is the owning side of a member's changelog partitions in rounds
// without a transaction ("Rounds without a transaction", docs/CLUSTER.md).
// For each partition the member is assigned it restores the partition,
// claims it with an epoch record that restates the restored trailer, and
// makes the first write: the repairs of the keys the restore found
// foreign, and a trailer (Take). Thereafter it writes each round's batches
// for the partitions it owns, with their repairs, and says of each whether
// it counted (Round). It keeps, per partition, where the replay stands
// after the owner's writes that counted (State) and the position in the
// commands topic (Commands).
//
// Its methods run one at a time, like the Writer's.
type Owner struct {
	w       *Writer
	c       Config
	restate Restate

	mu    sync.Mutex
	parts map[int32]*ownedChain
}

// ownedChain is an owned partition's state after the owner's writes.
type ownedChain struct {
	// state is where a replay stands after the last write that counted
	// with no repair pending: what a local copy may keep with its offset,
	// since a copy must not move past a foreign key before its repair
	// counts.
	state ChainState
	// last is the last trailer that counted.
	last Trailer
	// repairs are the keys foreign records changed, not yet written again.
	repairs map[string]bool
}

// Result is what became of an owned partition's write.
type Result uint8

const (
	// Counted: the write counts; the round's replies and forwards of the
	// partition may go out.
	Counted Result = iota
	// Fenced: another owner claimed the partition; the write never
	// counts and the owner no longer owns the partition.
	Fenced
	// Unknown: the write may count or not, whole; the owner no longer
	// writes the partition and must Take it again to learn which.
	Unknown
)

// Outcome is what became of one partition's write in a round.
type Outcome struct {
	// Partition is the changelog partition.
	Partition int32
	// Result says whether the write counted.
	Result Result
	// Written is the Writer's report of the batch.
	Written Written
}

// claimAttempts bounds the claims Take makes to land its epoch record
// where its restore ended (Restated).
const claimAttempts = 3

// Restate gives the updates that write a changelog key's current state
// again, the repair of a key foreign records changed: for a key of the
// shard's state, its current value (nil: absent); for a range delete's
// key (changelog package), the range delete, then the current value of
// each key its range holds. A zombie's copy of a range delete, compacted
// over the owner's, would bring back the keys the owner's deleted; the
// owner's written again deletes them, and would delete as well the keys
// written in the range since, which the values after it set again.
type Restate func(partition int32, key []byte) ([]Update, error)

// NewOwner owns partitions through w, a Writer of c's changelog. restate
// gives the repairs of foreign keys from the shard's current state.
func NewOwner(w *Writer, c Config, restate Restate) *Owner {
	return &Owner{w: w, c: c, restate: restate, parts: map[int32]*ownedChain{}}
}

// Taken is what Take did with a partition.
type Taken struct {
	// Epoch is the owner's epoch over the partition.
	Epoch Epoch
	// Restored is what the restore read, up to the owner's epoch record.
	Restored Restored
	// First is the outcome of the owner's first write.
	First Outcome
}

// Take restores partition from where from stands (a local copy's state,
// or LogStart()), giving apply each change that counts, claims it for who
// and makes the owner's first write. The epoch record restates the
// restored trailer if it lands where the restore ended: a zombie's late
// trailer can then not take, once compacted, the state the new owner
// restored. If something else lands there first, Take claims again, up to
// claimAttempts times; past that it keeps its last claim, and the first
// write's trailer restates the state, in time only if it is written
// before min.compaction.lag.ms runs out. A claim whose term is below the
// one in force does not take the partition (Chain): Take refuses it with
// a StaleClaimError, before it claims if its restore found that term, or
// once its claim landed after a claim of that term.
func (o *Owner) Take(ctx context.Context, partition int32, from ChainState, who Claim, apply func(key, value []byte) error) (Taken, error) {
	o.Drop(partition)
	r, err := newChainReplay(o.c, partition, from, apply, nil)
	if err != nil {
		return Taken{}, err
	}
	e, err := o.claimRestored(ctx, r, who)
	if err != nil {
		return Taken{}, err
	}
	restored, err := r.restored(ctx)
	if err != nil {
		return Taken{}, err
	}
	st := restored.State
	oc := &ownedChain{state: st, last: Trailer{Epoch: e, Commands: st.Commands(), Book: st.Book()}, repairs: map[string]bool{}}
	for _, k := range restored.Foreign {
		oc.repairs[string(k)] = true
	}
	o.mu.Lock()
	o.parts[partition] = oc
	o.mu.Unlock()
	out, unsent, err := o.round(ctx, nil, []int32{partition})
	i := slices.IndexFunc(out, func(oc Outcome) bool { return oc.Partition == partition })
	if j := slices.IndexFunc(unsent, func(oc Outcome) bool { return oc.Partition == partition }); err == nil && j >= 0 {
		err = unsent[j].Written.Err
	} else if err == nil && i < 0 {
		err = fmt.Errorf("kafkalog: %s/%d given up during its take", o.c.ChangelogTopic(), partition)
	}
	if err != nil {
		// The claim is left to no later round: they would carry this
		// partition's repairs and fail the same way.
		o.Drop(partition)
		return Taken{}, err
	}
	return Taken{Epoch: e, Restored: restored, First: out[i]}, nil
}

// ErrStaleClaim reports a claim of a term below the one in force
// (StaleClaimError).
var ErrStaleClaim = errors.New("kafkalog: claim of a term below the one in force")

// StaleClaimError refuses a Take whose claim does not take the partition:
// the term in force is above the claim's. Either the owner is a zombie the
// group moved on from, or the group was made again and its generations
// started over: an owner whose membership the group's coordinator confirms
// current takes the partition again with Era one past InForce's.
type StaleClaimError struct {
	// Partition is the changelog partition.
	Partition int32
	// Claim is the refused claim's term, InForce the term in force.
	Claim, InForce Term
}

func (e *StaleClaimError) Error() string {
	return fmt.Sprintf("%v: partition %d claimed in era %d generation %d, era %d generation %d in force",
		ErrStaleClaim, e.Partition, e.Claim.Era, e.Claim.Generation, e.InForce.Era, e.InForce.Generation)
}

// Is makes a StaleClaimError match ErrStaleClaim.
func (e *StaleClaimError) Is(target error) bool { return target == ErrStaleClaim }

// claimRestored reads the partition to its end, claims it restating what
// it read, and reads on up to the epoch record; again if the record did
// not land at the end read. It claims nothing if who's term is below the
// one in force, and fails if its claim did not take.
func (o *Owner) claimRestored(ctx context.Context, r *chainReplay, who Claim) (Epoch, error) {
	for attempt := 1; ; attempt++ {
		end, err := endOffset(ctx, o.c, o.c.ChangelogTopic(), r.partition, nil)
		if err != nil {
			return NoEpoch, err
		}
		if err := r.readTo(ctx, max(end, r.offset)); err != nil {
			return NoEpoch, err
		}
		st := r.state()
		if who.Term().Less(st.Term) {
			return NoEpoch, &StaleClaimError{Partition: r.partition, Claim: who.Term(), InForce: st.Term}
		}
		who.Restated = nil
		if st.Last != nil {
			who.Restated = &Restated{At: st.Offset, Last: *st.Last}
		}
		e, err := o.w.Claim(ctx, r.partition, who)
		if err != nil {
			return NoEpoch, err
		}
		landed := int64(e) == r.offset
		if err := r.readTo(ctx, int64(e)+1); err != nil {
			return NoEpoch, err
		}
		if r.chain.Epoch() != e {
			o.w.Drop(r.partition)
			return NoEpoch, &StaleClaimError{Partition: r.partition, Claim: who.Term(), InForce: r.chain.Term()}
		}
		if landed || attempt == claimAttempts {
			return e, nil
		}
	}
}

// restatement is a batch of no change of its own: it carries the
// partition's repairs and restates its last trailer.
func (o *Owner) restatement(partition int32, oc *ownedChain) Batch {
	book := oc.last.Book.Clone()
	return Batch{Partition: partition, Commands: oc.last.Commands, Book: &book}
}

// Round writes a round's batches, at most one per owned partition, each
// preceded by its partition's pending repairs and followed by the records
// of the forwards its book owes since its last write and the tombstones of
// those acknowledged since (a batch's Book is the partition's, Owner.Book,
// taken on by the round; one without a Book keeps the partition's); an
// owned partition with repairs pending and no batch gets one restating its
// last trailer. A
// round that only read a partition still writes it a batch, a trailer
// alone: a reply is known current only once a write counts. The outcomes
// come in the batches' order, then the added ones'. A partition whose
// write did not count is dropped. An added batch that cannot be written
// (its repairs not read, or too large) is not sent: its outcome is
// Unknown with the reason as Written.Err, and its partition is dropped,
// so that the round's other batches go out. The error refuses the whole
// round, nothing sent: a partition not taken (ErrNotClaimed), a batch too
// large (ErrRoundTooLarge), or a repair's value not read.
func (o *Owner) Round(ctx context.Context, batches []Batch) ([]Outcome, error) {
	out, unsent, err := o.round(ctx, batches, nil)
	return append(out, unsent...), err
}

// round is Round with, besides batches, a restatement of each of restate
// still owned, built under the lock that orders rounds: a restatement
// built before a round that counts would take its trailer back. The
// outcomes of the added batches not sent come apart (unsent).
func (o *Owner) round(ctx context.Context, batches []Batch, restate []int32) (out, unsent []Outcome, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	asked := len(batches)
	for _, p := range restate {
		if oc, ok := o.parts[p]; ok {
			batches = append(batches, o.restatement(p, oc))
		}
	}
	batches, unsent, err = o.withRepairs(batches, asked)
	if err != nil {
		return nil, nil, err
	}
	o.withForwards(batches)
	written, err := o.w.Write(ctx, batches)
	if err != nil {
		return nil, nil, err
	}
	out = make([]Outcome, len(batches), len(batches)+len(unsent))
	for i, wr := range written {
		out[i] = o.settle(batches[i], wr)
	}
	return out, unsent, nil
}

// withRepairs adds to batches the pending repairs of their partitions,
// and a batch for each owned partition with repairs and none in the round.
// The batches from the caller's own are the first asked of them; those
// after, and the added ones, are the Owner's: one of those that cannot be
// written is left out, its partition dropped, its outcome in failed.
func (o *Owner) withRepairs(batches []Batch, asked int) (out []Batch, failed []Outcome, err error) {
	in := make(map[int32]bool, len(batches))
	out = make([]Batch, 0, len(batches))
	for _, b := range batches {
		if _, ok := o.parts[b.Partition]; !ok {
			return nil, nil, fmt.Errorf("%w: %s/%d not taken", ErrNotClaimed, o.c.ChangelogTopic(), b.Partition)
		}
		in[b.Partition] = true
		out = append(out, b)
	}
	for _, p := range slices.Sorted(maps.Keys(o.parts)) {
		if oc := o.parts[p]; len(oc.repairs) > 0 && !in[p] {
			out = append(out, o.restatement(p, oc))
		}
	}
	kept := out[:0]
	for i, b := range out {
		err := o.repair(&b)
		if err == nil && i >= asked {
			err = o.w.fits(b)
		}
		switch {
		case err == nil:
			kept = append(kept, b)
		case i < asked:
			return nil, nil, err
		default:
			delete(o.parts, b.Partition)
			o.w.Drop(b.Partition)
			failed = append(failed, Outcome{Partition: b.Partition, Result: Unknown,
				Written: Written{Partition: b.Partition, Base: -1, End: -1, Err: err}})
		}
	}
	return kept, failed, nil
}

// repair puts before b's updates its partition's pending repairs.
func (o *Owner) repair(b *Batch) error {
	oc := o.parts[b.Partition]
	if len(oc.repairs) == 0 {
		return nil
	}
	repairs, err := o.repairs(b.Partition, oc)
	if err != nil {
		return err
	}
	b.Updates = append(repairs, b.Updates...)
	return nil
}

// repairs are the updates that write again the current state of each key
// foreign records changed.
func (o *Owner) repairs(partition int32, oc *ownedChain) ([]Update, error) {
	ups, err := restateAll(partition, oc.repairs, func(p int32, k []byte) ([]Update, error) {
		return o.restateKey(p, oc, k)
	})
	if err != nil {
		return nil, fmt.Errorf("kafkalog: repairing %s/%d: %w", o.c.ChangelogTopic(), partition, err)
	}
	return ups, nil
}

// restateAll is restate's updates for each of keys, in the keys' order.
func restateAll(partition int32, keys map[string]bool, restate Restate) ([]Update, error) {
	ups := make([]Update, 0, len(keys))
	for _, k := range sortedKeys(keys) {
		u, err := restate(partition, k)
		if err != nil {
			return nil, fmt.Errorf("restating %q: %w", k, err)
		}
		ups = append(ups, u...)
	}
	return ups, nil
}

// settle records what became of partition b's write.
func (o *Owner) settle(b Batch, wr Written) Outcome {
	out := Outcome{Partition: b.Partition, Result: Counted, Written: wr}
	switch {
	case wr.Err != nil:
		out.Result = Unknown
	case !wr.Valid:
		out.Result = Fenced
	}
	if out.Result != Counted {
		delete(o.parts, b.Partition)
		return out
	}
	oc := o.parts[b.Partition]
	oc.last = Trailer{Epoch: oc.last.Epoch, Commands: b.Commands, Book: b.Book.Clone()}
	clear(oc.repairs)
	for _, k := range wr.ForeignKeys {
		oc.repairs[string(k)] = true
	}
	if len(oc.repairs) == 0 {
		last := oc.last
		oc.state = ChainState{Offset: wr.End, Epoch: last.Epoch, Term: oc.state.Term, Last: &last}
	}
	return out
}

// State is where a replay of partition stands after the owner's writes
// that counted, up to the last one that left no repair pending: what a
// local copy of the partition keeps beside its offset. False if the owner
// does not own partition.
func (o *Owner) State(partition int32) (ChainState, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	oc, ok := o.parts[partition]
	if !ok {
		return ChainState{}, false
	}
	st := oc.state
	if st.Last != nil {
		last := *st.Last
		last.Book = last.Book.Clone()
		st.Last = &last
	}
	return st, true
}

// Commands is the offset of the commands topic partition's owner reads on
// from, as its last trailer that counted says; -1 if no trailer ever
// counted (a changelog of transactional rounds: the group's committed
// offset says it). False if the owner does not own partition.
func (o *Owner) Commands(partition int32) (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	oc, ok := o.parts[partition]
	if !ok {
		return -1, false
	}
	return oc.last.Commands, true
}

// Book is a copy of partition's bookkeeping of forwards as its last write
// that counted left it (the forwards it owes and its counters), and false
// if the owner does not own it.
func (o *Owner) Book(partition int32) (Book, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	oc, ok := o.parts[partition]
	if !ok {
		return Book{}, false
	}
	return oc.last.Book.Clone(), true
}

// Drop gives partition up: the member was revoked it.
func (o *Owner) Drop(partition int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.parts, partition)
	o.w.Drop(partition)
}
