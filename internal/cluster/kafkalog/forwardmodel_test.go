package kafkalog

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fwdLog is a changelog partition in memory, numbered as the broker
// numbers it, whose records the log cleaner may remove (compact).
type fwdLog struct {
	records []*kgo.Record
	next    int64
	nonce   uint64
}

func (l *fwdLog) add(r *kgo.Record) int64 {
	r.Offset = l.next
	l.next++
	l.records = append(l.records, r)
	return r.Offset
}

// from returns the records at offset at and after.
func (l *fwdLog) from(at int64) []*kgo.Record {
	i, _ := slices.BinarySearchFunc(l.records, at, func(r *kgo.Record, at int64) int { return int(r.Offset - at) })
	return l.records[i:]
}

// countsOf runs records through a Chain: which count.
func countsOf(t *testing.T, records []*kgo.Record) []bool {
	c := NewChain(NoEpoch, Term{})
	counts := make([]bool, len(records))
	for i, r := range records {
		e, err := ReadEntry(r)
		if err != nil {
			t.Fatal(err)
		}
		counts[i] = c.Counts(e)
	}
	return counts
}

// compact removes some of the records the log cleaner may remove at any
// moment: a trailer a later one of its key replaces; another record a
// later one of its key replaces, once a record of its key that counts
// follows it (a foreign record's repair comes before
// min.compaction.lag.ms lets the cleaner reach it); a tombstone that
// counts once no other record of its key is left. Epoch records' keys are
// unique. It returns how many forward records it removed.
func (l *fwdLog) compact(t *testing.T, rng *rand.Rand) (forwards int) {
	counts := countsOf(t, l.records)
	last, lastCounting, left := map[string]int{}, map[string]int{}, map[string]int{}
	for i, r := range l.records {
		last[string(r.Key)] = i
		left[string(r.Key)]++
		if counts[i] {
			lastCounting[string(r.Key)] = i
		}
	}
	keep := l.records[:0:0]
	for i, r := range l.records {
		k := string(r.Key)
		e, _ := ReadEntry(r)
		lc, ok := lastCounting[k]
		removable := (e.Kind == KindTrailer && last[k] > i) ||
			(e.Kind == KindChange && ok && lc > i) ||
			(e.Kind == KindChange && counts[i] && r.Value == nil && left[k] == 1)
		if removable && rng.IntN(2) == 0 {
			left[k]--
			forwards += btoi(isForward(r.Key))
			continue
		}
		keep = append(keep, r)
	}
	l.records = keep
	return forwards
}

// isForward reports that key is a forward record's.
func isForward(key []byte) bool {
	_, ok := forwardOf(key)
	return ok
}

// replayLog restores records from where from stands, as RestoreChain does:
// the shard's keys that count into state, and where the replay ends.
func replayLog(t *testing.T, from ChainState, records []*kgo.Record, state map[string]string) (ChainState, [][]byte) {
	t.Helper()
	r := startReplay(from, func(k, v []byte) error {
		if v == nil {
			delete(state, string(k))
		} else {
			state[string(k)] = string(v)
		}
		return nil
	})
	for _, rec := range records {
		if err := r.take(rec); err != nil {
			t.Fatal(err)
		}
		r.offset = rec.Offset + 1
	}
	return r.state(), sortedKeys(r.foreign)
}

// fwdOwner is an owner of one partition in the simulation: its epoch, where
// its last write ended, the shard's keys and the book after its last write
// that counted, the keys it owes a repair, and its node's Forwarder.
type fwdOwner struct {
	part   int32
	epoch  Epoch
	end    int64
	state  map[string]string
	book   Book
	repair map[string]bool
	fw     *Forwarder
	alive  bool // neither crashed nor told fenced
}

// fwdPart is a partition: its changelog, its owners (the last is current,
// earlier live ones are zombies), what its writes that counted wrote, and a
// local copy of it (the state of a write that left no repair pending).
type fwdPart struct {
	id        int32
	log       fwdLog
	owners    []*fwdOwner
	truth     map[string]string
	truthBook Book
	copyAt    ChainState
	copyState map[string]string
}

// fwdMsg is a value sent to a partition's owner.
type fwdMsg struct {
	to         int32
	key, value []byte
}

// fwdSim runs partitions that owe each other forwards over a network that
// loses, repeats, reorders and misroutes messages, the partitions' owners
// crashing before or after their writes, zombies writing on, and the log
// cleaner compacting the changelogs at any moment.
type fwdSim struct {
	lossyNet
	t      *testing.T
	parts  []*fwdPart
	issued map[fwdID]string // forwards owed by a write that counted
	now    time.Time
	values int
	limits Limits
	// What happened, over all seeds: work refused over the limits, forward
	// records zombies wrote, repaired and compacted away.
	seen *fwdSeen
}

// fwdSeen counts what the schedules had.
type fwdSeen struct{ refused, zombies, repaired, compacted int }

// fwdID names a forward: its source, destination and sequence.
type fwdID struct {
	from, to int32
	seq      uint64
}

const fwdResend = 5 * time.Second

// lossyNet is a network of values sent to partitions' owners that, while
// lossy, loses, repeats and reorders them.
type lossyNet struct {
	rng   *rand.Rand
	net   []fwdMsg
	lossy bool
}

// chance is true one time in n while the network is lossy.
func (s *lossyNet) chance(n int) bool { return s.lossy && s.rng.IntN(n) == 0 }

// send is the owners' Forwarders' Send: the message may be lost, or sent
// twice.
func (s *lossyNet) send(to int32, key, value []byte) {
	if s.chance(6) {
		return
	}
	s.net = append(s.net, fwdMsg{to: to, key: key, value: value})
	if s.chance(8) {
		s.net = append(s.net, fwdMsg{to: to, key: key, value: value})
	}
}

// inbox takes the messages to p off the network: while lossy, some, in
// any order; else all.
func (s *lossyNet) inbox(p int32) []fwdMsg {
	var in, rest []fwdMsg
	for _, m := range s.net {
		if m.to != p || s.chance(2) {
			rest = append(rest, m)
		} else {
			in = append(in, m)
		}
	}
	s.net = rest
	if s.lossy {
		s.rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	}
	return in
}

// current is p's current owner, nil if it crashed.
func (p *fwdPart) current() *fwdOwner {
	if o := p.owners[len(p.owners)-1]; o.alive {
		return o
	}
	return nil
}

// zombies are p's earlier owners still writing.
func (p *fwdPart) zombies() []*fwdOwner {
	var z []*fwdOwner
	for _, o := range p.owners[:len(p.owners)-1] {
		if o.alive {
			z = append(z, o)
		}
	}
	return z
}

// claim has a new owner take p, as Owner.Take does: it restores the log
// as compaction left it, from the log's start or p's local copy, claims p
// restating the trailer it read, and makes its first write (the repairs
// of what it found foreign). What it restored must be what p's writes that
// counted wrote.
func (s *fwdSim) claim(p *fwdPart) {
	from, state := LogStart(), map[string]string{}
	if s.rng.IntN(2) == 0 && p.copyState != nil {
		from, state = p.copyAt, maps.Clone(p.copyState)
	}
	st, foreign := replayLog(s.t, from, p.log.from(from.Offset), state)
	p.log.nonce++
	c := Claim{Generation: 1, Member: "o" + strconv.Itoa(len(p.owners)), Nonce: p.log.nonce}
	if st.Last != nil {
		c.Restated = &Restated{At: p.log.next, Last: *st.Last}
	}
	e := Epoch(p.log.add(EpochRecord("t", p.id, c)))
	st, more := replayLog(s.t, st, p.log.from(st.Offset), state)
	if restored := st.Book(); !maps.Equal(state, p.truth) || !sameBook(restored, p.truthBook) {
		s.t.Fatalf("partition %d restored %v owing %v, its writes wrote %v owing %v",
			p.id, state, seqsOf(restored.Owed()), p.truth, seqsOf(p.truthBook.Owed()))
	}
	o := &fwdOwner{part: p.id, epoch: e, end: int64(e) + 1, state: state, book: st.Book(), repair: map[string]bool{}, alive: true}
	for _, k := range append(foreign, more...) {
		o.repair[string(k)] = true
	}
	o.fw = NewForwarder(s.send, fwdResend)
	p.owners = append(p.owners, o)
	if !s.write(p, o, o.book.Clone(), maps.Clone(o.state), nil) {
		s.t.Fatalf("partition %d: the first write of epoch %d did not count", p.id, e)
	}
	o.fw.Take(p.id, o.book, s.now)
}

// round has o, p's owner or a zombie, run a round: record the
// acknowledgements received, judge and apply the forwards that came,
// owe new ones (within the limits), write, and have the Forwarder send
// what the write lets it. The owner may crash before or after its write.
func (s *fwdSim) round(p *fwdPart, o *fwdOwner) {
	book, state := o.book.Clone(), maps.Clone(o.state)
	if err := o.fw.Acknowledged(p.id, &book); err != nil {
		s.t.Fatal(err)
	}
	for _, m := range s.inbox(p.id) {
		s.take(p, o, &book, state, m)
	}
	var owed []Owed
	for range s.rng.IntN(3) * btoi(s.lossy) {
		to := (p.id + 1 + s.rng.Int32N(int32(len(s.parts)-1))) % int32(len(s.parts))
		if err := s.limits.Check(&book, to); err != nil {
			s.seen.refused++
			continue
		}
		s.values++
		v := "v" + strconv.Itoa(s.values) + strings.Repeat(".", s.rng.IntN(8))
		owed = append(owed, book.Owe(to, []byte("k"), []byte(v)))
	}
	if s.chance(10) {
		o.alive = false
		return
	}
	if !s.write(p, o, book, state, owed) {
		return
	}
	if s.chance(10) {
		o.alive = false
		return
	}
	o.fw.Counted(p.id, book, s.now)
}

// take has o's round take message m: a forward judged and, if next,
// applied (appended to the shard's key of its source), or answers.
func (s *fwdSim) take(p *fwdPart, o *fwdOwner, book *Book, state map[string]string, m fwdMsg) {
	if f, ok, err := ReadForward(m.to, m.key, m.value); ok {
		if err != nil {
			s.t.Fatal(err)
		}
		if o.fw.Judge(book, f) == ApplyForward {
			k := "got/" + strconv.Itoa(int(f.From))
			state[k] += "," + string(f.Value)
		}
		return
	}
	answers, ok, err := ReadAnswers(m.to, m.value)
	if !ok || err != nil {
		s.t.Fatalf("a message neither a forward nor answers: %q, %v", m.value, err)
	}
	for _, a := range answers {
		// A zombie may hear of forwards its successor owed.
		if err := o.fw.Answer(a, s.now); err != nil && o == p.current() {
			s.t.Fatal(err)
		}
	}
}

// write writes o's round, as Owner.Round does: the repairs o owes, the
// changed keys, the forward records and tombstones its book makes since
// its last write that counted, and a trailer; then judges it as the
// Writer does. It reports whether the write counts.
func (s *fwdSim) write(p *fwdPart, o *fwdOwner, book Book, state map[string]string, owed []Owed) bool {
	var ups []Update
	for _, k := range sortedKeys(o.repair) {
		if id, ok := forwardOf(k); ok {
			ups = append(ups, Update{Key: k, Value: o.book.forwardValue(id)})
			s.seen.repaired++
		} else {
			ups = append(ups, Update{Key: k, Value: valueOf(o.state, string(k))})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(state)) {
		if state[k] != o.state[k] {
			ups = append(ups, Update{Key: []byte(k), Value: []byte(state[k])})
		}
	}
	ups = append(ups, book.forwardUpdates(&o.book)...)
	base := p.log.next
	for _, u := range ups {
		p.log.add(ChangeRecord("t", p.id, o.epoch, u.Key, u.Value))
	}
	p.log.add(TrailerRecord("t", p.id, Trailer{Epoch: o.epoch, Commands: -1, Book: book}))
	counts := s.judge(p, o, base, book, state, owed)
	if !counts && slices.ContainsFunc(ups, func(u Update) bool { return isForward(u.Key) }) {
		s.seen.zombies++
	}
	return counts
}

// judge is the Writer's verdict on o's write at base and, if it counts,
// the Owner's bookkeeping of it.
func (s *fwdSim) judge(p *fwdPart, o *fwdOwner, base int64, book Book, state map[string]string, owed []Owed) bool {
	gap := p.log.from(o.end)
	gap = gap[:slices.IndexFunc(gap, func(r *kgo.Record) bool { return r.Offset >= base })]
	repair := map[string]bool{}
	for _, r := range gap {
		switch e, _ := ReadEntry(r); e.Kind {
		case KindEpoch:
			o.alive = false
			o.fw.Drop(p.id)
			return false
		case KindChange:
			repair[string(e.Key)] = true
		}
	}
	o.end, o.repair, o.state, o.book = p.log.next, repair, state, book
	p.truth, p.truthBook = maps.Clone(state), book.Clone()
	for _, f := range owed {
		s.issued[fwdID{from: p.id, to: f.Partition, seq: f.Seq}] = string(f.Value)
	}
	for to := range s.parts {
		if n, size := len(book.owed[int32(to)]), book.owedBytes[int32(to)]; n > s.limits.Forwards || size > s.limits.Bytes+16 {
			s.t.Fatalf("partition %d owes %d: %d forwards, %d bytes", p.id, to, n, size)
		}
	}
	if len(repair) == 0 {
		last := Trailer{Epoch: o.epoch, Commands: -1, Book: book.Clone()}
		p.copyAt, p.copyState = ChainState{Offset: o.end, Epoch: o.epoch, Last: &last}, maps.Clone(state)
	}
	return true
}

// valueOf is k's value in state, nil if absent.
func valueOf(state map[string]string, k string) []byte {
	v, ok := state[k]
	if !ok {
		return nil
	}
	return []byte(v)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sameBook reports that two books hold the same counters and owe the same
// forwards.
func sameBook(a, b Book) bool {
	return maps.Equal(a.assigned, b.assigned) && maps.Equal(a.acked, b.acked) && maps.Equal(a.applied, b.applied) &&
		slices.EqualFunc(a.Owed(), b.Owed(), sameOwed)
}

// step runs one thing at random: a partition's owner's round, a zombie's,
// a new owner's claim (the old one crashed, or lives on as a zombie), the
// cleaner, or the resend timer.
func (s *fwdSim) step() {
	p := s.parts[s.rng.IntN(len(s.parts))]
	s.now = s.now.Add(time.Second)
	switch z := p.zombies(); {
	case p.current() == nil || s.rng.IntN(12) == 0:
		s.claim(p)
	case len(z) > 0 && s.rng.IntN(3) == 0:
		s.round(p, z[s.rng.IntN(len(z))])
	case s.rng.IntN(6) == 0:
		s.seen.compacted += p.log.compact(s.t, s.rng)
	default:
		s.round(p, p.current())
	}
	for _, q := range s.parts {
		for _, o := range q.owners {
			if o.alive {
				o.fw.Tick(s.now)
			}
		}
	}
}

// settled reports that nothing is owed, repaired or in flight.
func (s *fwdSim) settled() bool {
	for _, p := range s.parts {
		if o := p.current(); o == nil || len(o.book.Owed()) > 0 || len(o.repair) > 0 {
			return false
		}
	}
	return len(s.net) == 0
}

// check compares what each partition's writes applied with what the
// sources' writes owed: every forward applied exactly once, in order; and
// the compacted changelogs hold no forward record but tombstones.
func (s *fwdSim) check(seed uint64) {
	want := map[[2]int32][]string{}
	for _, id := range slices.SortedFunc(maps.Keys(s.issued), func(a, b fwdID) int { return int(a.seq) - int(b.seq) }) {
		k := [2]int32{id.from, id.to}
		want[k] = append(want[k], s.issued[id])
	}
	for _, p := range s.parts {
		for _, from := range s.parts {
			got := p.truth["got/"+strconv.Itoa(int(from.id))]
			if w := want[[2]int32{from.id, p.id}]; got != strings.Join(append([]string{""}, w...), ",") {
				s.t.Fatalf("seed %d: partition %d applied from %d %q, owed %q", seed, p.id, from.id, got, w)
			}
		}
		for _, r := range compacted(p.log.records) {
			if _, ok := forwardOf(r.Key); ok && r.Value != nil {
				s.t.Fatalf("seed %d: partition %d's compacted log keeps a forward record, %q", seed, p.id, r.Key)
			}
		}
	}
}

// Random schedules of rounds over 3 partitions, with messages lost,
// repeated, reordered and delivered to zombies, owners crashing before or
// after their writes, zombies writing forward records of their own, the
// cleaner compacting the changelogs at any moment, and sources refusing
// work over their limits; then a calm in which the owners go on and the
// Forwarders send again what is owed: every forward a write owed is
// applied exactly once, in order, each restore finds what the writes that
// counted wrote, and no forward record outlives its acknowledgement.
func TestBookAppliesEachForwardOnce(t *testing.T) {
	seen := &fwdSeen{}
	for seed := range uint64(300) {
		s := &fwdSim{lossyNet: lossyNet{rng: rand.New(rand.NewPCG(seed, 2)), lossy: true}, t: t, issued: map[fwdID]string{},
			now: time.Unix(0, 0), limits: Limits{Forwards: 4, Bytes: 40}, seen: seen}
		for i := range 3 {
			p := &fwdPart{id: int32(i), truth: map[string]string{}}
			s.parts = append(s.parts, p)
			s.claim(p)
		}
		for range 150 {
			s.step()
		}
		s.lossy = false
		for i := 0; !s.settled(); i++ {
			if i == 50 {
				t.Fatalf("seed %d: still owed or in flight after 50 calm rounds", seed)
			}
			s.now = s.now.Add(fwdResend)
			for _, p := range s.parts {
				if p.current() == nil {
					s.claim(p)
				}
				for _, z := range p.zombies() {
					z.alive = false
				}
				s.round(p, p.current())
				p.current().fw.Tick(s.now)
			}
		}
		s.check(seed)
	}
	if seen.refused == 0 || seen.zombies == 0 || seen.repaired == 0 || seen.compacted == 0 {
		t.Fatalf("the schedules never had some of what they test: %+v", *seen)
	}
}
