package kafkalog

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
	// member's Limits allow (Config.ForwardLimits): not applied, and
	// their position moves past them; the caller answers them as
	// unavailable (ErrOwesTooMuch).
	Refused []Command
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
	// Send are the replies and forwards the partition's commands owe
	// (Output.From), for the caller to send once the part counts.
	Send []Output
}

// RoundWait runs one round: it takes the partitions left to take again
// (one whose take fails stays untaken, its commands Untaken), notes the
// take of each partition it writes before it reads (a command is written
// only under the take it was read under), waits for commands
// until wait ends (a round with none returns wait's error), takes those
// of local before those it polls, up to max in all (max+PackMax-1 at
// most), applies them under ctx and writes, per partition, the changes
// (Change outputs) and a trailer holding the offset after the last
// command read there (Owner.Round). Replies and forwards are returned per
// source partition, to send once its write counts. An error of apply or
// of the write gives every partition of the round up, taken again before
// the next round; the caller drops what it applied of them. Rounds must
// not run concurrently.
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
	outs, err := apply(ctx, batch)
	if err != nil {
		res.Partitions = m.giveUp(partitionsOf(batch))
		return res, err
	}
	parts, err := m.parts(batch, outs)
	if err != nil {
		res.Partitions = m.giveUp(partitionsOf(batch))
		return res, err
	}
	res.Partitions, err = m.write(ctx, takes, parts)
	return res, err
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

// parts groups a round's commands and outputs per partition: each batch
// carries the partition's changes and a trailer at the offset after its
// last command read, or its last trailer's position if the round read
// none there; with no Book, it keeps the partition's.
func (m *ChainMember) parts(batch []Command, outs []Output) (map[int32]*part, error) {
	parts := map[int32]*part{}
	of := func(p int32) *part {
		if pt, ok := parts[p]; ok {
			return pt
		}
		at, _ := m.o.Commands(p)
		pt := &part{batch: Batch{Partition: p, Commands: at}}
		parts[p] = pt
		return pt
	}
	for _, c := range batch {
		pt := of(c.Partition)
		if c.Offset >= 0 {
			pt.batch.Commands = max(pt.batch.Commands, c.Offset+1)
		}
	}
	for _, o := range outs {
		switch o.Kind {
		case Change:
			pt := of(o.Partition)
			pt.batch.Updates = append(pt.batch.Updates, Update{Key: o.Key, Value: o.Value})
		case Reply, Forward:
			pt := of(o.From)
			pt.send = append(pt.send, o)
		default:
			return nil, fmt.Errorf("kafkalog: output of unknown kind %d", o.Kind)
		}
	}
	return parts, nil
}

// write writes the parts of partitions still taken under the take the
// round read them under (takes); the others are not written: Fenced if
// no longer taken, Unknown and taken again before the next round (which
// reads its commands again from its position) if taken again since. A
// partition whose write is fenced is no longer read; one whose outcome is
// unknown is taken again before the next round.
func (m *ChainMember) write(ctx context.Context, takes map[int32]uint64, parts map[int32]*part) ([]PartitionRound, error) {
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

// release stops writing and reading p after a write that did not count:
// taken again before the next round if its outcome is unknown and the
// group still assigns it. Called under own.
func (m *ChainMember) release(p int32, r Result) {
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
