package kafkalog

import (
	"maps"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// simOwner is an owner of the simulated partition: the state and the
// position in the commands it restored and wrote, where its last write
// ended, and the keys it owes a repair.
type simOwner struct {
	name     string
	epoch    Epoch
	term     Term
	end      int64
	view     map[string]string
	commands int64
	repair   map[string]bool
	fenced   bool
}

// simulation runs owners, zombies among them, over one changelog
// partition: each writes as a Writer does and is told what a Writer tells.
type simulation struct {
	t      *testing.T
	rng    *rand.Rand
	log    testLog
	owners []*simOwner
	truth  map[string]string // what the writes told valid wrote
	at     int64             // the position in the commands they wrote last
	writes int
	term   Term // the highest term the group gave so far
}

// The simulated shard's keys are k0 to k5. A change of a key "rIJ" is a
// range delete, as the changelog package writes one: it deletes k(I) up
// to k(J), J excluded.

// apply applies a change of key to value to state. A tombstone of a range
// delete's key deletes nothing, as in the changelog package.
func apply(state map[string]string, key, value []byte) {
	switch {
	case value == nil:
		delete(state, string(key))
	case key[0] == 'r':
		for i := key[1]; i < key[2]; i++ {
			delete(state, "k"+string(i))
		}
	default:
		state[string(key)] = string(value)
	}
}

// restate is what a node's Restate gives from state: a key's current
// value, or a range delete and the current value of each key in its range.
func restate(state map[string]string) Restate {
	value := func(k string) []byte {
		if v, ok := state[k]; ok {
			return []byte(v)
		}
		return nil
	}
	return func(_ int32, key []byte) ([]Update, error) {
		if key[0] != 'r' {
			return []Update{{Key: key, Value: value(string(key))}}, nil
		}
		ups := []Update{{Key: key, Value: []byte("range")}}
		for i := key[1]; i < key[2]; i++ {
			if k := "k" + string(i); value(k) != nil {
				ups = append(ups, Update{Key: []byte(k), Value: value(k)})
			}
		}
		return ups, nil
	}
}

// replay returns the state the changes that count in records make, the
// keys of changes that do not, and the position in the commands the last
// trailer that counts holds, or the last epoch record restates.
func replay(t *testing.T, records []*kgo.Record) (state map[string]string, foreign map[string]bool, commands int64) {
	state, foreign, commands = map[string]string{}, map[string]bool{}, -1
	c := NewChain(NoEpoch, Term{})
	for _, r := range records {
		e, err := ReadEntry(r)
		if err != nil {
			t.Fatal(err)
		}
		switch counts := c.Counts(e); {
		case e.Kind == KindChange && counts:
			apply(state, e.Key, e.Value)
		case e.Kind == KindChange:
			foreign[string(e.Key)] = true
		case e.Kind == KindTrailer && counts:
			commands = e.Trailer.Commands
		case e.Kind == KindEpoch && counts:
			if t := e.Claim.restated(e.Offset); t != nil {
				commands = t.Commands
			}
		}
	}
	return state, foreign, commands
}

// claim adds an owner as Owner.Take does, of a term above every one the
// group gave before: a later generation, or, a tenth of the time, the
// first generations of the group made again, in the next era. It restores
// the log to its end, its trailers compacted as the cleaner may have left
// them at any time, and appends its epoch record restating the position
// read. If a live owner wrote first, the record restates nothing; the
// owner reads on to the log's end (its trailers whole: the read follows
// the claim by less than min.compaction.lag.ms) and claims again. Its
// restore up to its epoch record, trailers compacted, must give what the
// valid writes wrote.
func (s *simulation) claim() {
	if s.rng.IntN(10) == 0 {
		s.term = Term{Era: s.term.Era + 1, Generation: int32(s.rng.IntN(3))}
	} else {
		s.term.Generation++
	}
	name := "o" + strconv.Itoa(len(s.owners))
	read := int64(len(s.log.records))
	_, _, at := replay(s.t, compactedTrailers(s.log.records))
	s.maybeWrite()
	e := s.log.claimRestating(name, s.term, read, at)
	if int64(e) != read {
		s.maybeWrite() // fenced: a late trailer of an epoch read on
		read = int64(len(s.log.records))
		_, _, at = replay(s.t, s.log.records)
		e = s.log.claimRestating(name, s.term, read, at)
	}
	view, foreign, at := replay(s.t, compactedTrailers(s.log.records[:e+1]))
	if !maps.Equal(view, s.truth) || at != s.at {
		s.t.Fatalf("owner of epoch %d restored %v at %d, the valid writes wrote %v at %d", e, view, at, s.truth, s.at)
	}
	s.owners = append(s.owners, &simOwner{name: name, epoch: e, term: s.term, end: int64(e) + 1, view: view, commands: at, repair: foreign})
}

// zombieClaim has an owner the group moved on from claim again, as a
// paused owner whose write's outcome was unknown does when it thaws: its
// claim carries its own, stale, term and restates a position of its own.
// Its read of the log raced the later owner's claim, so its record lands:
// the replay must not let it take the partition, and its owner, reading
// up to it, learns it does not own the partition.
func (s *simulation) zombieClaim() {
	var stale []*simOwner
	for _, o := range s.owners {
		if o.term.Less(s.term) {
			stale = append(stale, o)
		}
	}
	if len(stale) == 0 {
		return
	}
	z := stale[s.rng.IntN(len(stale))]
	e := s.log.claimRestating("zombie", z.term, int64(len(s.log.records)), -7)
	c := NewChain(NoEpoch, Term{})
	for _, r := range s.log.records[:e+1] {
		en, _ := ReadEntry(r)
		c.Counts(en)
	}
	if c.Epoch() == e {
		s.t.Fatalf("a zombie's claim of term %+v took the partition from the owner of term %+v", z.term, s.term)
	}
	z.fenced = true
}

// write has o write a batch of changes to random keys, a range delete
// among them at times, after the repairs of the keys it owes one (as
// Owner.Round writes them, from its view), with a trailer restating its
// position in the commands (which the round may not move), then judges it
// as the Writer does.
func (s *simulation) write(o *simOwner) {
	s.writes++
	repairs, err := restateAll(0, o.repair, restate(o.view))
	if err != nil {
		s.t.Fatal(err)
	}
	var batch []Update
	for range 1 + s.rng.IntN(3) {
		if s.rng.IntN(4) == 0 {
			i := '0' + byte(s.rng.IntN(6))
			j := i + 1 + byte(s.rng.IntN(int('6'-i)))
			batch = append(batch, Update{Key: []byte{'r', i, j}, Value: []byte("range")})
			continue
		}
		batch = append(batch, upd("k"+strconv.Itoa(s.rng.IntN(6)), "w"+strconv.Itoa(s.writes)))
	}
	base := int64(len(s.log.records))
	for _, u := range append(repairs, batch...) {
		s.log.add(ChangeRecord("t", 0, o.epoch, u.Key, u.Value))
	}
	at := o.commands
	if s.rng.IntN(2) == 0 {
		at = int64(s.writes)
	}
	s.log.add(TrailerRecord("t", 0, Trailer{Epoch: o.epoch, Commands: at}))
	fenced, keys, err := judgeGap(claimed{epoch: o.epoch, term: o.term, member: o.name}, s.log.records[o.end:base])
	if err != nil {
		s.t.Fatalf("owner of epoch %d: %v", o.epoch, err)
	}
	if o.fenced = fenced; fenced {
		if o.term == s.term {
			s.t.Fatalf("the owner of the term in force %+v was fenced", o.term)
		}
		return
	}
	// The repairs restate the state: the batch's own changes alone make
	// the new one.
	for _, u := range batch {
		apply(o.view, u.Key, u.Value)
		apply(s.truth, u.Key, u.Value)
	}
	o.commands, s.at = at, at
	o.end, o.repair = int64(len(s.log.records)), map[string]bool{}
	for _, k := range keys {
		o.repair[string(k)] = true
	}
}

// maybeWrite has a live owner write, half the time.
func (s *simulation) maybeWrite() {
	if live := s.live(); len(live) > 0 && s.rng.IntN(2) == 0 {
		s.write(live[s.rng.IntN(len(live))])
	}
}

// live are the owners not told fenced yet: the last, and zombies.
func (s *simulation) live() []*simOwner {
	var live []*simOwner
	for _, o := range s.owners {
		if !o.fenced {
			live = append(live, o)
		}
	}
	return live
}

// compactedTrailers is records with each epoch's trailers but the last
// removed, as the cleaner may leave them any time: a zombie's late
// trailer replaces the last one its epoch wrote while in force. Changes
// stay: their repair comes before min.compaction.lag.ms runs out.
func compactedTrailers(records []*kgo.Record) []*kgo.Record {
	return compactedIf(records, func(r *kgo.Record) bool {
		e, _ := ReadEntry(r)
		return e.Kind == KindTrailer
	})
}

// step claims the partition, has a zombie claim it, or has a live owner
// write.
func (s *simulation) step() {
	live := s.live()
	if len(live) == 0 || s.rng.IntN(5) == 0 {
		s.claim()
		return
	}
	if s.rng.IntN(8) == 0 {
		s.zombieClaim()
		return
	}
	s.write(live[s.rng.IntN(len(live))])
}

// Random schedules of claims and writes by owners and zombies, and claims
// by zombies of the terms the group moved on from: what the writes were
// told valid is what a replay counts, from the whole log and from the log
// compacted once the last owner wrote its repairs, and no zombie's claim
// takes the partition from the owner of the term in force.
func TestChainCountsWhatWritersWereToldValid(t *testing.T) {
	for seed := range uint64(500) {
		s := &simulation{t: t, rng: rand.New(rand.NewPCG(seed, 1)), truth: map[string]string{}, at: -1}
		for range 40 {
			s.step()
		}
		s.claim()
		last := s.owners[len(s.owners)-1]
		s.write(last)
		s.write(last) // the repairs of what zombies wrote before the first
		if last.fenced {
			t.Fatalf("seed %d: the last owner was fenced", seed)
		}
		for name, records := range map[string][]*kgo.Record{"log": s.log.records, "compacted log": compacted(s.log.records)} {
			if state, _, at := replay(t, records); !maps.Equal(state, s.truth) || at != s.at {
				t.Fatalf("seed %d: the %s replays to %v at %d, the valid writes wrote %v at %d", seed, name, state, at, s.truth, s.at)
			}
		}
	}
}
