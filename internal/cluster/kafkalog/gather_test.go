package kafkalog

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Commands appended at once travel packed, and rounds read them: never
// more than their max but for the rest of a record, each command once and
// in its appender's order.
func TestPackedRoundsKeepMaxAndOrder(t *testing.T) {
	const appenders, each, most = 16, 100, 2 * PackMax
	ctx, c := newCluster(t, 1)
	p, err := NewProducer(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	for a := range appenders {
		wg.Go(func() {
			for i := range each {
				key := fmt.Appendf(nil, "cmd-%d", a*each+i)
				if _, err := p.Append(ctx, 0, key, key); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	a := joinChain(t, c, "a")
	next := make([]int, appenders)
	applied, packed := 0, false
	for applied < appenders*each {
		var batch []Command
		res, err := a.m.RoundWait(ctx, ctx, most, nil, func(ctx context.Context, b []Command) ([]Output, error) {
			batch = b
			for i, cmd := range b {
				packed = packed || i > 0 && cmd.Offset == b[i-1].Offset
				var n int
				if _, err := fmt.Sscanf(string(cmd.Key), "cmd-%d", &n); err != nil || n%each != next[n/each] {
					t.Fatalf("command %s applied after %d of its appender's", cmd.Key, next[n/each])
				}
				next[n/each]++
			}
			applied += len(b)
			return a.apply(ctx, b)
		})
		if err != nil {
			t.Fatal(err)
		}
		// A round whose poll found only a transient error reads nothing
		// and writes nothing; every round that read commands counts.
		if res.Commands > most+PackMax-1 || !res.Counted() {
			t.Fatalf("round %+v after %d commands: want at most %d commands, counted", res, applied, most+PackMax-1)
		}
		a.record(res, batch)
	}
	if !packed {
		t.Error("no record carried several commands")
	}
	exactlyOnceApplied(t, appenders*each, a)
}

// tellingLocal is a testLocal that tells took of each take that took
// commands.
type tellingLocal struct {
	*testLocal
	took chan struct{}
}

func (l tellingLocal) Take(max int) []Command {
	taken := l.testLocal.Take(max)
	if len(taken) > 0 {
		l.took <- struct{}{}
	}
	return taken
}

// A busy round gathers the local commands that come while it gathers,
// each taken at the wake its adding gives, until it has its max. The
// gaps and the linger outlast the test: only the wakes bring them.
func TestBusyRoundGathersTheCommandsEachWakeBrings(t *testing.T) {
	const most = 4
	endlessGaps(t)
	_, ctx, c := fakeCluster(t, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ConsumeTopics(c.CommandsTopic()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	g := &poller{cl: cl}
	local := tellingLocal{newTestLocal(localCommand(0, "c-0")), make(chan struct{}, most)}
	adder := make(chan struct{})
	go func() {
		defer close(adder)
		for i := 1; i < most; i++ {
			select {
			case <-local.took:
				local.add(localCommand(0, fmt.Sprintf("c-%d", i)))
			case <-ctx.Done():
				return
			}
		}
	}()
	g.last = busyRound
	g.begin(local)
	got, err := g.commands(ctx, ctx, most)
	<-adder
	if err != nil || len(got) != most {
		t.Fatalf("the busy round got %d commands, %v; want %d", len(got), err, most)
	}
	for i, cmd := range got {
		if want := fmt.Sprintf("c-%d", i); string(cmd.Key) != want {
			t.Errorf("command %d is %s, want %s", i, cmd.Key, want)
		}
	}
}

// endlessGaps makes the gaps and the linger of t's rounds outlast it: only
// wakes or a round's max end their gathering.
func endlessGaps(t *testing.T) {
	gaps, linger := []time.Duration{smallGap, gatherGap}, roundLinger
	smallGap, gatherGap, roundLinger = time.Hour, time.Hour, time.Hour
	t.Cleanup(func() { smallGap, gatherGap, roundLinger = gaps[0], gaps[1], linger })
}

// tellingPolls is a client hook that sends on itself for each record a
// poll returns.
type tellingPolls chan struct{}

func (h tellingPolls) OnFetchRecordUnbuffered(_ *kgo.Record, polled bool) {
	if polled {
		h <- struct{}{}
	}
}

// A busy round gathers the commands the commands topic brings while it
// gathers, each taken once the client has fetched it, until it has its
// max, as it does local ones: its local source stays empty, and the gaps
// and the linger outlast the test.
func TestBusyRoundGathersTheCommandsEachFetchBrings(t *testing.T) {
	const most = 4
	endlessGaps(t)
	_, ctx, c := fakeCluster(t, 1)
	g := &poller{}
	took := make(tellingPolls, most)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ConsumeTopics(c.CommandsTopic()),
		g.fetchWakes(), kgo.WithHooks(took))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	g.cl = cl
	producer := newClient(t, c)
	produce := func(key string) error {
		r := &kgo.Record{Topic: c.CommandsTopic(), Key: []byte(key), Value: []byte(key)}
		return producer.ProduceSync(ctx, r).FirstErr()
	}
	if err := produce("c-0"); err != nil {
		t.Fatal(err)
	}
	adder := make(chan error, 1)
	go func() {
		for i := 1; i < most; i++ {
			select {
			case <-took:
				if err := produce(fmt.Sprintf("c-%d", i)); err != nil {
					adder <- err
					return
				}
			case <-ctx.Done():
				adder <- ctx.Err()
				return
			}
		}
		adder <- nil
	}()
	g.last = busyRound
	g.begin(newTestLocal())
	got, err := g.commands(ctx, ctx, most)
	if err != nil || len(got) != most {
		t.Fatalf("the busy round got %d commands, %v; want %d", len(got), err, most)
	}
	if err := <-adder; err != nil {
		t.Fatal(err)
	}
	for i, cmd := range got {
		if want := fmt.Sprintf("c-%d", i); string(cmd.Key) != want || cmd.Offset != int64(i) {
			t.Errorf("command %d is %s at offset %d, want %s at %d", i, cmd.Key, cmd.Offset, want, i)
		}
	}
}

// heldBeforePollable holds the client's fetch goroutine once the round
// has been woken for record c-1 and until a poll that waits starts: the
// client calls its buffered hook before the record can be polled, so a
// round woken then finds nothing, and must wait for the record rather
// than for its next wake or its gap's end.
type heldBeforePollable struct {
	ctx   context.Context
	polls chan context.Context
}

func (h heldBeforePollable) OnPollStart(ctx context.Context) {
	select {
	case h.polls <- ctx:
	default:
	}
}

func (h heldBeforePollable) OnFetchRecordBuffered(r *kgo.Record) {
	if string(r.Key) != "c-1" {
		return
	}
	for {
		select {
		case ctx := <-h.polls:
			if ctx != nil {
				return
			}
		case <-h.ctx.Done():
			return
		}
	}
}

// A round woken for fetched records that are not yet pollable waits for
// them (nextUntil): with endless gaps, only that ends the round with both.
func TestRoundWokenBeforeItsRecordsArePollableWaitsForThem(t *testing.T) {
	endlessGaps(t)
	_, ctx, c := fakeCluster(t, 1)
	g := &poller{}
	h := heldBeforePollable{ctx: ctx, polls: make(chan context.Context, 64)}
	took := make(tellingPolls, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.ConsumeTopics(c.CommandsTopic()),
		g.fetchWakes(), kgo.WithHooks(h, took))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	g.cl = cl
	producer := newClient(t, c)
	rec := func(k string) *kgo.Record {
		return &kgo.Record{Topic: c.CommandsTopic(), Key: []byte(k), Value: []byte(k)}
	}
	if err := producer.ProduceSync(ctx, rec("c-0")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	produced := make(chan error, 1)
	go func() {
		<-took
		for len(h.polls) > 0 {
			<-h.polls
		}
		produced <- producer.ProduceSync(ctx, rec("c-1")).FirstErr()
	}()
	g.last = busyRound
	g.begin(newTestLocal())
	got, err := g.commands(ctx, ctx, 2)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if err != nil || len(got) != 2 {
		t.Fatalf("got %d commands, %v; want 2", len(got), err)
	}
}
