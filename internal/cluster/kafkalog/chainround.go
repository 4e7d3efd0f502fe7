package kafkalog

import (
	"context"
	"maps"
	"slices"
	"time"
)

// ChainRound is what a ChainMember's round did.
type ChainRound struct {
	// Commands is the number of commands the round read.
	Commands int
	// Partitions are the round's partitions, in order: those of its
	// commands, those its changes and outputs came from, and those the
	// Owner wrote repairs to.
	Partitions []PartitionRound
	// Untaken are the commands read for partitions the member did not
	// write when the round began (a move under way): not applied. Their
	// partition's next take decides where its commands are read from; the
	// caller fails or hands on the local ones.
	Untaken []Command
	// Refused are the commands, neither forwards nor answers, of
	// partitions whose book owes some destination as much as the
	// member's Limits allow (Config.ForwardLimits): not applied. Their
	// position moves past them only if their partition's write counts:
	// the caller answers them as unavailable (ErrOwesTooMuch) only then,
	// since after a write that does not count they are read again and
	// may be applied.
	Refused []Command
	// Dropped are the forwards and answers read that do not decode, and
	// the answers values naming a forward their source never owed
	// (ErrUnknownForward): not applied, though the value's other
	// answers are taken; their position moves past them.
	Dropped []Command
}

// PartitionRound is what became of one partition in a round.
type PartitionRound struct {
	Partition int32
	// Result says whether the partition's part of the round counts:
	// Counted, and Send may go out; Fenced, never (another owner claimed
	// the partition, or the member gave it up before its write), and the
	// member no longer writes it; Unknown, it may count or not, and the
	// member takes the partition again before its next round (the caller
	// rebuilds the partition's state from that take).
	Result Result
	// Written is the Writer's report of the partition's batch, zero if
	// none was written.
	Written Written
	// Send are the replies the partition's commands owe (Output.From),
	// for the caller to send once the part counts. The forwards they owe
	// are in the partition's book, written with it: the member's
	// Forwarder sends them once the write counts.
	Send []Output
}

// Counted reports that every partition's write of the round counted: the
// round's replies and forwards may all go out. A round that wrote no
// partition counted too.
func (r ChainRound) Counted() bool {
	return !slices.ContainsFunc(r.Partitions, func(pr PartitionRound) bool { return pr.Result != Counted })
}

// RoundWait runs one round: it takes the partitions left to take again
// (one whose take fails stays untaken, its commands Untaken), notes the
// take of each partition it writes before it reads (a command is written
// only under the take it was read under), waits for commands
// until wait ends (a round with none returns wait's error), takes those
// of local before those it polls, up to max in all (max+PackMax-1 at
// most), sorts them with the round's books (roundBooks.judge: forwards
// judged, answers taken, commands of a partition that owes too much
// Refused), applies the others under ctx and writes, per partition, the
// changes (Change outputs), its book, owing the forwards its commands owe
// (Forward outputs, by Output.From), and a trailer holding the offset
// after the last command read there (Owner.Round). Replies are returned
// per source partition, to send once its write counts; the member's
// Forwarder sends the forwards of each partition whose write counted. An
// error of apply or of the write gives every partition of the round up,
// taken again before the next round; the caller drops what it applied of
// them. Rounds must not run concurrently.
func (m *ChainMember) RoundWait(wait, ctx context.Context, maxCommands int, local Local, apply Apply) (ChainRound, error) {
	m.retakeAll(ctx)
	before := m.takesNow()
	m.g.begin(local)
	batch, err := m.g.commands(wait, ctx, maxCommands)
	m.g.local = nil
	if err != nil || len(batch) == 0 {
		return ChainRound{}, err
	}
	takes := m.takesNow()
	for p, t := range before {
		// Taken again while the round read: some of its commands may
		// have been read under the former take, which write tells apart.
		if takes[p] > 0 {
			takes[p] = t
		}
	}
	res := ChainRound{Commands: len(batch)}
	batch, res.Untaken = m.split(batch, takes)
	if len(batch) == 0 {
		return res, nil
	}
	err = m.run(ctx, takes, batch, apply, &res)
	return res, err
}

// run applies and writes the commands of a round read under takes, into
// res.
func (m *ChainMember) run(ctx context.Context, takes map[int32]uint64, batch []Command, apply Apply, res *ChainRound) error {
	books := newRoundBooks(m.o, m.f, m.cfg.ForwardLimits, time.Now())
	var kept []Command
	kept, res.Refused, res.Dropped = books.judge(batch)
	var outs []Output
	var err error
	if len(kept) > 0 {
		outs, err = apply(ctx, kept)
	}
	var parts map[int32]*part
	if err == nil {
		parts, err = books.parts(batch, outs)
	}
	if err == nil {
		err = books.err
	}
	if err != nil {
		res.Partitions = m.giveUp(partitionsOf(batch))
		return err
	}
	res.Partitions, err = m.write(ctx, takes, parts, books)
	return err
}

// takesNow is the take of each partition the member writes.
func (m *ChainMember) takesNow() map[int32]uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.taken)
}

// split parts batch into the commands of partitions taken and the others.
func (m *ChainMember) split(batch []Command, takes map[int32]uint64) (kept, untaken []Command) {
	kept = batch[:0:0]
	for _, c := range batch {
		if takes[c.Partition] > 0 {
			kept = append(kept, c)
		} else {
			untaken = append(untaken, c)
		}
	}
	return kept, untaken
}

// partitionsOf are the partitions of batch's commands.
func partitionsOf(batch []Command) []int32 {
	set := map[int32]bool{}
	for _, c := range batch {
		set[c.Partition] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// part is one partition's part of a round: its batch, and what it owes.
type part struct {
	batch Batch
	send  []Output
}

// write writes the parts of partitions still taken under the take the
// round read them under (takes); the others are not written: Fenced if
// no longer taken, Unknown and taken again before the next round (which
// reads its commands again from its position) if taken again since. A
// partition whose write is fenced is no longer read; one whose outcome is
// unknown is taken again before the next round. The Forwarder takes what
// became of each write (roundBooks.settle) before a revoke can drop its
// partition.
func (m *ChainMember) write(ctx context.Context, takes map[int32]uint64, parts map[int32]*part, books *roundBooks) ([]PartitionRound, error) {
	m.own.Lock()
	defer m.own.Unlock()
	m.mu.Lock()
	var batches []Batch
	var retaken []int32
	rounds := map[int32]*PartitionRound{}
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		rounds[p] = &PartitionRound{Partition: p, Result: Fenced, Send: parts[p].send}
		switch t := m.taken[p]; {
		case t > 0 && t == takes[p]:
			batches = append(batches, parts[p].batch)
		case t > 0:
			rounds[p].Result = Unknown
			retaken = append(retaken, p)
		}
	}
	m.mu.Unlock()
	for _, p := range retaken {
		m.o.Drop(p)
		m.release(p, Unknown)
	}
	outs, err := m.o.Round(ctx, batches)
	if err != nil {
		for _, b := range batches {
			rounds[b.Partition].Result = Unknown
			m.release(b.Partition, Unknown)
		}
		return sortedRounds(rounds), err
	}
	for _, o := range outs {
		pr, ok := rounds[o.Partition]
		if !ok { // a repair the Owner added
			pr = &PartitionRound{Partition: o.Partition}
			rounds[o.Partition] = pr
		}
		pr.Result, pr.Written = o.Result, o.Written
		books.settle(o.Partition, o.Result)
		if o.Result != Counted {
			m.release(o.Partition, o.Result)
		}
	}
	return sortedRounds(rounds), nil
}

// giveUp releases ps as of unknown outcome: a round applied their
// commands and wrote nothing.
func (m *ChainMember) giveUp(ps []int32) []PartitionRound {
	m.own.Lock()
	defer m.own.Unlock()
	out := make([]PartitionRound, len(ps))
	for i, p := range ps {
		m.o.Drop(p)
		m.release(p, Unknown)
		out[i] = PartitionRound{Partition: p, Result: Unknown}
	}
	return out
}

// release stops writing and reading p after a write that did not count,
// and driving its forwards: taken again before the next round if its
// outcome is unknown and the group still assigns it. Called under own.
func (m *ChainMember) release(p int32, r Result) {
	m.f.Drop(p)
	m.mu.Lock()
	delete(m.taken, p)
	if r == Unknown && m.assigned[p] {
		m.retake[p] = true
	}
	m.mu.Unlock()
	pause(m.g.cl, m.cfg.CommandsTopic(), p)
}

// sortedRounds are rounds in partition order.
func sortedRounds(rounds map[int32]*PartitionRound) []PartitionRound {
	out := make([]PartitionRound, 0, len(rounds))
	for _, p := range slices.Sorted(maps.Keys(rounds)) {
		out = append(out, *rounds[p])
	}
	return out
}
