package kafkalog

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// fwdID names a forward: its source and its sequence there.
type fwdID struct {
	from, to int32
	seq      uint64
}

// fwdMsg is a forward, or an acknowledgement of every forward from to
// through seq, in flight between partitions.
type fwdMsg struct {
	ack   bool
	id    fwdID
	value string
}

// fwdPart is a partition and its owner: the book and the forwards applied
// in memory, and what its last write that counts holds (a trailer, and the
// effects written beside it).
type fwdPart struct {
	id         int32
	book       Book
	applied    []fwdMsg
	saved      Trailer
	savedState []fwdMsg
}

// fwdSim runs partitions that owe each other forwards over a network that
// loses, repeats and reorders messages, their owners crashing before or
// after their writes.
type fwdSim struct {
	t      *testing.T
	rng    *rand.Rand
	parts  []*fwdPart
	net    []fwdMsg
	issued map[fwdID]string // forwards owed by a write that counted
	lossy  bool             // losses, repeats, reorders and crashes happen
	values int
}

// chance is true one time in n while the simulation is lossy.
func (s *fwdSim) chance(n int) bool { return s.lossy && s.rng.IntN(n) == 0 }

// send puts m in flight, unless it is lost.
func (s *fwdSim) send(m fwdMsg) {
	if !s.chance(6) {
		s.net = append(s.net, m)
	}
}

// inbox takes messages to p off the network: some, in any order, while
// lossy (a taken message may stay in flight, to arrive again); else all.
func (s *fwdSim) inbox(p int32) []fwdMsg {
	var in, rest []fwdMsg
	for _, m := range s.net {
		switch {
		case m.id.to != p && !m.ack, m.ack && m.id.from != p, s.chance(2):
			rest = append(rest, m)
		default:
			in = append(in, m)
			if s.chance(4) {
				rest = append(rest, m)
			}
		}
	}
	s.net = rest
	if s.lossy {
		s.rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	}
	return in
}

// take has p's round handle its inbox; it returns the sources to
// acknowledge.
func (s *fwdSim) take(p *fwdPart, in []fwdMsg) map[int32]bool {
	acks := map[int32]bool{}
	for _, m := range in {
		if m.ack {
			if err := p.book.Acknowledge(m.id.to, m.id.seq); err != nil {
				s.t.Fatal(err)
			}
			continue
		}
		switch p.book.Accept(m.id.from, m.id.seq) {
		case ApplyForward:
			if want := s.issued[m.id]; m.value != want {
				s.t.Fatalf("forward %+v applied with %q, owed with %q", m.id, m.value, want)
			}
			p.applied = append(p.applied, m)
			acks[m.id.from] = true
		case DuplicateForward:
			acks[m.id.from] = true
		}
	}
	return acks
}

// round runs one round of p: take its inbox, owe new forwards, write, and
// send what the write let it send. The owner may crash before or after
// its write.
func (s *fwdSim) round(p *fwdPart) {
	acks := s.take(p, s.inbox(p.id))
	var owed []Owed
	for range s.rng.IntN(3) * btoi(s.lossy) {
		to := (p.id + 1 + s.rng.Int32N(int32(len(s.parts)-1))) % int32(len(s.parts))
		s.values++
		owed = append(owed, p.book.Owe(to, nil, []byte("v"+strconv.Itoa(s.values))))
	}
	if s.chance(8) {
		s.restart(p)
		return
	}
	s.write(p, owed)
	if s.chance(8) {
		s.restart(p)
		return
	}
	for _, f := range owed {
		s.send(fwdMsg{id: fwdID{from: p.id, to: f.Partition, seq: f.Seq}, value: string(f.Value)})
	}
	for from := range acks {
		s.send(fwdMsg{ack: true, id: fwdID{from: from, to: p.id, seq: p.book.Applied(from)}})
	}
	if !s.lossy || s.chance(4) {
		s.resend(p) // a timer's: forwards owed long unacknowledged
	}
}

// write makes p's round count: its trailer and effects, read back as a
// restore would read them.
func (s *fwdSim) write(p *fwdPart, owed []Owed) {
	e, err := ReadEntry(TrailerRecord("t", p.id, Trailer{Epoch: 0, Commands: -1, Book: p.book}))
	if err != nil {
		s.t.Fatal(err)
	}
	p.saved, p.savedState = e.Trailer, slices.Clone(p.applied)
	for _, f := range owed {
		s.issued[fwdID{from: p.id, to: f.Partition, seq: f.Seq}] = string(f.Value)
	}
}

// restart is a new owner of p: it restores from p's last write and sends
// again, in order, every forward still owed.
func (s *fwdSim) restart(p *fwdPart) {
	e, err := ReadEntry(TrailerRecord("t", p.id, p.saved))
	if err != nil {
		s.t.Fatal(err)
	}
	p.book, p.applied = e.Trailer.Book, slices.Clone(p.savedState)
	s.resend(p)
}

// resend sends every forward p still owes, in order.
func (s *fwdSim) resend(p *fwdPart) {
	for _, f := range p.book.Owed() {
		s.send(fwdMsg{id: fwdID{from: p.id, to: f.Partition, seq: f.Seq}, value: string(f.Value)})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// settled reports that nothing is in flight and nothing is owed.
func (s *fwdSim) settled() bool {
	for _, p := range s.parts {
		if len(p.book.Owed()) > 0 {
			return false
		}
	}
	return len(s.net) == 0
}

// check compares the forwards the partitions' writes applied with those
// the sources' writes owed: each applied exactly once.
func (s *fwdSim) check(seed uint64) {
	seen := map[fwdID]int{}
	for _, p := range s.parts {
		for _, m := range p.savedState {
			seen[m.id]++
		}
	}
	for id := range s.issued {
		if seen[id] != 1 {
			s.t.Fatalf("seed %d: forward %+v applied %d times", seed, id, seen[id])
		}
	}
	if len(seen) != len(s.issued) {
		s.t.Fatalf("seed %d: %d forwards applied, %d owed", seed, len(seen), len(s.issued))
	}
}

// Random schedules of rounds over 3 partitions, with messages lost,
// repeated and reordered and owners crashing before or after their writes,
// then a calm in which the owners resend what they owe: every forward a
// write owed is applied exactly once.
func TestBookAppliesEachForwardOnce(t *testing.T) {
	for seed := range uint64(300) {
		s := &fwdSim{t: t, rng: rand.New(rand.NewPCG(seed, 2)), issued: map[fwdID]string{}, lossy: true}
		for i := range 3 {
			s.parts = append(s.parts, &fwdPart{id: int32(i), saved: Trailer{Commands: -1}})
		}
		for range 80 {
			s.round(s.parts[s.rng.IntN(len(s.parts))])
		}
		s.lossy = false
		for i := 0; !s.settled(); i++ {
			if i == 50 {
				t.Fatalf("seed %d: still owed or in flight after 50 calm rounds", seed)
			}
			for _, p := range s.parts {
				s.round(p)
			}
		}
		s.check(seed)
	}
}
