package kafkalog

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"
)

// wireLog records what Forwarders send, in order.
type wireLog struct{ sent []fwdMsg }

func (w *wireLog) send(to int32, key, value []byte) {
	w.sent = append(w.sent, fwdMsg{to: to, key: key, value: value})
}

// take returns what was sent since the last take.
func (w *wireLog) take() []fwdMsg {
	out := w.sent
	w.sent = nil
	return out
}

// describeSent lists messages as "F from->to #seq value" and "A to: dest kind seq".
func describeSent(t *testing.T, msgs []fwdMsg) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		if f, ok, err := ReadForward(m.to, m.key, m.value); ok {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, "F "+strconv.Itoa(int(f.From))+"->"+strconv.Itoa(int(f.To))+" #"+strconv.FormatUint(f.Seq, 10)+" "+string(f.Value))
			continue
		}
		as, ok, err := ReadAnswers(m.to, m.value)
		if !ok || err != nil {
			t.Fatalf("neither a forward nor answers: %q, %v", m.value, err)
		}
		for _, a := range as {
			kind := map[AnswerKind]string{Acked: "acked", Expected: "expected"}[a.Kind]
			out = append(out, "A "+strconv.Itoa(int(a.Source))+": "+strconv.Itoa(int(a.Destination))+" "+kind+" "+strconv.FormatUint(a.Seq, 10))
		}
	}
	return out
}

func expectSent(t *testing.T, w *wireLog, want ...string) []fwdMsg {
	t.Helper()
	msgs := w.take()
	if got := describeSent(t, msgs); !slices.Equal(got, want) {
		t.Fatalf("sent:\n got %q\nwant %q", got, want)
	}
	return msgs
}

// answersIn reads the answers among msgs.
func answersIn(t *testing.T, msgs []fwdMsg) []Answer {
	t.Helper()
	var out []Answer
	for _, m := range msgs {
		if as, ok, _ := ReadAnswers(m.to, m.value); ok {
			out = append(out, as...)
		}
	}
	return out
}

// judgeAll has dst's round judge the forwards among msgs, in order.
func judgeAll(t *testing.T, dst *Forwarder, book *Book, msgs []fwdMsg) []Verdict {
	t.Helper()
	var out []Verdict
	for _, m := range msgs {
		f, ok, err := ReadForward(m.to, m.key, m.value)
		if !ok || err != nil {
			t.Fatalf("not a forward: %q, %v", m.value, err)
		}
		out = append(out, dst.Judge(book, f))
	}
	return out
}

var t0 = time.Unix(1000, 0)

// linked are the Forwarders of a source, partition 0, and a destination,
// partition 1, taken with empty books, resending after a minute, and what
// they send.
func linked() (*wireLog, *Forwarder, *Forwarder) {
	w := &wireLog{}
	src, dst := NewForwarder(w.send, time.Minute), NewForwarder(w.send, time.Minute)
	src.Take(0, Book{}, t0)
	dst.Take(1, Book{}, t0)
	return w, src, dst
}

// A source sends its forwards only once the write that owes them counts;
// the destination applies them and, once its own write counts,
// acknowledges them in one cumulative answer; the source's next round
// records it, and the source sends them no more.
func TestForwarderSendsOnceTheWriteCountsAndAcknowledgesCumulatively(t *testing.T) {
	w, src, dst := linked()
	expectSent(t, w)
	var book Book
	book.Owe(1, []byte("k"), []byte("a"))
	book.Owe(1, []byte("k"), []byte("b"))
	expectSent(t, w)
	src.Counted(0, book, t0)
	msgs := expectSent(t, w, "F 0->1 #1 a", "F 0->1 #2 b")

	var dbook Book
	if v := judgeAll(t, dst, &dbook, msgs); !slices.Equal(v, []Verdict{ApplyForward, ApplyForward}) {
		t.Fatalf("verdicts %v", v)
	}
	expectSent(t, w) // nothing before the destination's write counts
	dst.Counted(1, dbook, t0)
	acks := expectSent(t, w, "A 0: 1 acked 2")
	dst.Counted(1, dbook, t0)
	expectSent(t, w) // acknowledged already

	for _, a := range answersIn(t, acks) {
		if err := src.Answer(a, t0); err != nil {
			t.Fatal(err)
		}
	}
	src.Tick(t0.Add(time.Hour))
	expectSent(t, w)
	next := book.Clone()
	if err := src.Acknowledged(0, &next); err != nil || len(next.Owed()) != 0 || next.Acknowledged(1) != 2 {
		t.Fatalf("the next round's book owes %v, acknowledged %d: %v", next.Owed(), next.Acknowledged(1), err)
	}
}

// A forward that comes early (one before it lost) is answered at once with
// the sequence expected, once per round however many come early; the
// source sends again from there, once per sequence expected.
func TestForwarderAnswersAnEarlyForwardWithTheSequenceExpected(t *testing.T) {
	w, src, dst := linked()
	var book Book
	for _, v := range []string{"a", "b", "c"} {
		book.Owe(1, nil, []byte(v))
	}
	src.Counted(0, book, t0)
	msgs := w.take()
	var dbook Book
	if v := judgeAll(t, dst, &dbook, msgs[1:]); !slices.Equal(v, []Verdict{EarlyForward, EarlyForward}) {
		t.Fatalf("verdicts %v", v)
	}
	expected := expectSent(t, w, "A 0: 1 expected 1")
	for range 2 {
		if err := src.Answer(answersIn(t, expected)[0], t0); err != nil {
			t.Fatal(err)
		}
	}
	again := expectSent(t, w, "F 0->1 #1 a", "F 0->1 #2 b", "F 0->1 #3 c")
	if v := judgeAll(t, dst, &dbook, again); !slices.Equal(v, []Verdict{ApplyForward, ApplyForward, ApplyForward}) {
		t.Fatalf("verdicts %v", v)
	}
	if v := judgeAll(t, dst, &dbook, msgs[2:]); v[0] != DuplicateForward {
		t.Fatalf("verdicts %v", v)
	}
	dst.Counted(1, dbook, t0)
	expectSent(t, w, "A 0: 1 acked 3")
}

// What a destination leaves unacknowledged for the resend period is sent
// again, in order, from the first forward not acknowledged; a repeated
// forward is acknowledged again though nothing new was applied.
func TestForwarderResendsWhatStaysUnacknowledged(t *testing.T) {
	w, src, dst := linked()
	var book Book
	book.Owe(1, nil, []byte("a"))
	book.Owe(1, nil, []byte("b"))
	src.Counted(0, book, t0)
	msgs := w.take()
	src.Tick(t0.Add(time.Minute - time.Nanosecond))
	expectSent(t, w)
	src.Tick(t0.Add(time.Minute))
	expectSent(t, w, "F 0->1 #1 a", "F 0->1 #2 b")

	var dbook Book
	judgeAll(t, dst, &dbook, msgs[:1])
	dst.Counted(1, dbook, t0)
	acks := answersIn(t, w.take())
	if err := src.Answer(acks[0], t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	src.Tick(t0.Add(3*time.Minute - time.Nanosecond))
	expectSent(t, w)
	src.Tick(t0.Add(3 * time.Minute))
	expectSent(t, w, "F 0->1 #2 b")

	if v := judgeAll(t, dst, &dbook, msgs[:1]); v[0] != DuplicateForward {
		t.Fatalf("verdicts %v", v)
	}
	dst.Counted(1, dbook, t0)
	expectSent(t, w, "A 0: 1 acked 1")
}

// A partition's new owner sends every forward its book owes, per
// destination in order, and acknowledges what its book applied: the
// previous owner may have died before either.
func TestForwarderNewOwnerSendsEverythingOwedInOrder(t *testing.T) {
	var book Book
	for _, to := range []int32{2, 1, 2, 1, 1} {
		book.Owe(to, nil, []byte("x"+strconv.FormatUint(book.assigned[to]+1, 10)))
	}
	if err := book.Acknowledge(1, 1); err != nil {
		t.Fatal(err)
	}
	book.Accept(5, 1)
	book.Accept(5, 2)
	w := &wireLog{}
	NewForwarder(w.send, time.Minute).Take(0, book, t0)
	expectSent(t, w, "F 0->1 #2 x2", "F 0->1 #3 x3", "F 0->2 #1 x1", "F 0->2 #2 x2", "A 5: 0 acked 2")
}

// An answer naming a sequence never assigned is refused; an answer to a
// partition the node does not own, a stale one and one of a partition
// dropped change nothing.
func TestForwarderChecksAnswers(t *testing.T) {
	w := &wireLog{}
	src := NewForwarder(w.send, time.Minute)
	src.Take(0, Book{}, t0)
	var book Book
	book.Owe(1, nil, []byte("a"))
	src.Counted(0, book, t0)
	w.take()
	for _, a := range []Answer{{Source: 0, Destination: 1, Kind: Acked, Seq: 2}, {Source: 0, Destination: 1, Kind: Expected, Seq: 3}} {
		if err := src.Answer(a, t0); !errors.Is(err, ErrUnknownForward) {
			t.Fatalf("answer %+v: %v", a, err)
		}
	}
	if err := src.Answer(Answer{Source: 7, Destination: 1, Kind: Acked, Seq: 9}, t0); err != nil {
		t.Fatal(err)
	}
	if err := src.Answer(Answer{Source: 0, Destination: 1, Kind: Acked, Seq: 1}, t0); err != nil {
		t.Fatal(err)
	}
	if err := src.Answer(Answer{Source: 0, Destination: 1, Kind: Expected, Seq: 1}, t0); err != nil {
		t.Fatal(err)
	}
	expectSent(t, w) // expecting what was acknowledged: stale
	src.Drop(0)
	src.Tick(t0.Add(time.Hour))
	expectSent(t, w)
	next := book.Clone()
	if err := src.Acknowledged(0, &next); err != nil || len(next.Owed()) != 1 {
		t.Fatalf("a dropped partition's round recorded %v: %v", next.Owed(), err)
	}
}

// A source refuses work that would owe a destination more once it owes it
// as many forwards or bytes as its limits allow, and takes it again once
// the destination acknowledged.
func TestLimitsRefuseOwingTooMuch(t *testing.T) {
	l := Limits{Forwards: 2, Bytes: 10}
	var b Book
	for range 2 {
		if err := l.Check(&b, 1); err != nil {
			t.Fatal(err)
		}
		b.Owe(1, nil, []byte("x"))
	}
	if err := l.Check(&b, 1); !errors.Is(err, ErrOwesTooMuch) {
		t.Fatalf("a third forward owed: %v", err)
	}
	if err := l.Check(&b, 2); err != nil {
		t.Fatalf("another destination: %v", err)
	}
	b.Owe(2, []byte("key"), []byte("1234567"))
	if err := l.Check(&b, 2); !errors.Is(err, ErrOwesTooMuch) {
		t.Fatalf("10 bytes owed: %v", err)
	}
	if err := b.Acknowledge(1, 1); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(&b, 1); err != nil {
		t.Fatalf("after an acknowledgement: %v", err)
	}
	var d Book
	for range DefaultMaxOwed {
		d.Owe(1, nil, nil)
	}
	if err := (Limits{}).Check(&d, 1); !errors.Is(err, ErrOwesTooMuch) {
		t.Fatalf("the default limits, %d owed: %v", DefaultMaxOwed, err)
	}
}

// Forwards and answers read back as written; other commands are neither,
// and a value cut short is refused.
func TestForwardWireReadsBack(t *testing.T) {
	f := Forwarded{From: 3, To: 9, Seq: 1 << 40, Key: []byte("4:rid"), Value: []byte("l\x02credit")}
	v := AppendForward(nil, f)
	if len(v) != 1+1+6+len(f.Value) {
		t.Fatalf("a forward's value takes %d bytes", len(v))
	}
	got, ok, err := ReadForward(9, f.Key, v)
	if !ok || err != nil || got.From != 3 || got.To != 9 || got.Seq != f.Seq || string(got.Key) != "4:rid" || string(got.Value) != string(f.Value) {
		t.Fatalf("read back %+v, %v, %v", got, ok, err)
	}
	as := []Answer{{Source: 2, Destination: 9, Kind: Acked, Seq: 7}, {Source: 2, Destination: 1 << 30, Kind: Expected, Seq: 1}}
	back, ok, err := ReadAnswers(2, AppendAnswers(nil, as))
	if !ok || err != nil || !slices.Equal(back, as) {
		t.Fatalf("answers read back %+v, %v, %v", back, ok, err)
	}
	for _, cmd := range [][]byte{nil, []byte("l\x01"), []byte("k")} {
		if _, ok, _ := ReadForward(0, nil, cmd); ok {
			t.Fatalf("%q read as a forward", cmd)
		}
		if _, ok, _ := ReadAnswers(0, cmd); ok {
			t.Fatalf("%q read as answers", cmd)
		}
	}
	for _, bad := range [][]byte{v[:2], AppendForward(nil, Forwarded{From: 1}), AppendAnswers(nil, as)[:5], []byte{AnswerTag, 1, 0, 2, 1}} {
		_, okF, errF := ReadForward(0, nil, bad)
		_, okA, errA := ReadAnswers(0, bad)
		if !(okF && errors.Is(errF, ErrBadForward)) && !(okA && errors.Is(errA, ErrBadForward)) {
			t.Fatalf("%q: forward %v %v, answers %v %v", bad, okF, errF, okA, errA)
		}
	}
}
