package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

var ctx = context.Background()

// put is a command of the test workload: it sets key to value in its
// shard's slice, and reads back what the slice held before.
type put struct {
	key, value string
	// deadline, if set, is the slice's next deadline.
	deadline time.Time
	old      string // the outcome
}

// counter is a test workload's slice: a map applied in rounds, written as
// records, published to a map readers see. It records the order in which
// the engine called it.
type counter struct {
	id        int
	all       *[]*counter
	state     map[string]string
	changed   []string
	published *sync.Map
	deadline  time.Time
	ticks     atomic.Int32
	// received counts, per round, the changes of the other slices seen
	// by Receive.
	received atomic.Int32
	calls    []string
	mu       sync.Mutex
}

func (c *counter) log(call string) {
	c.mu.Lock()
	c.calls = append(c.calls, call)
	c.mu.Unlock()
}

func (c *counter) Apply(cmds []Command, _ time.Time) {
	c.log("apply")
	for _, cmd := range cmds {
		switch cmd := cmd.(type) {
		case *put:
			cmd.old = c.state[cmd.key]
			c.state[cmd.key] = cmd.value
			c.changed = append(c.changed, cmd.key)
			if !cmd.deadline.IsZero() {
				c.deadline = cmd.deadline
			}
		case Tick:
			c.ticks.Add(1)
			c.deadline = time.Time{}
		default:
			panic(fmt.Sprintf("unknown command %T", cmd))
		}
	}
}

func (c *counter) Size() int { return len(c.changed) }

func (c *counter) Receive() {
	c.log("receive")
	for _, other := range *c.all {
		if other != c {
			c.received.Add(int32(len(other.changed)))
		}
	}
}

func (c *counter) Write(b *pebble.Batch) {
	c.log("write")
	for _, k := range c.changed {
		_ = b.Set([]byte("test/"+k), []byte(c.state[k]), nil)
	}
}

func (c *counter) Publish(time.Time) {
	c.log("publish")
	for _, k := range c.changed {
		c.published.Store(k, c.state[k])
	}
}

func (c *counter) Announce() { c.log("announce") }

func (c *counter) Finish() time.Time {
	c.log("finish")
	c.changed = c.changed[:0]
	return c.deadline
}

// testWorkload attaches a counter per shard to a new engine and starts it.
func testWorkload(t *testing.T, cfg Config) (*Engine, *Port, []*counter, *sync.Map) {
	t.Helper()
	cfg.Dir, cfg.Logger = t.TempDir(), slog.New(slog.DiscardHandler)
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var all []*counter
	published := &sync.Map{}
	slices := make([]Slice, e.Shards())
	for i := range slices {
		c := &counter{id: i, all: &all, state: map[string]string{}, published: published}
		all = append(all, c)
		slices[i] = c
	}
	p := e.Attach(slices)
	e.Start()
	return e, p, all, published
}

// A call completes only once its round is written, durable and published,
// and its command carries its outcome.
func TestCallCompletesAfterCommitAndPublish(t *testing.T) {
	e, p, slices, published := testWorkload(t, Config{Shards: 2})
	for i := range 10 {
		key := fmt.Sprint("k", i)
		cmd := &put{key: key, value: "v1"}
		if err := p.Do(ctx, e.ShardOf(key), cmd); err != nil {
			t.Fatal(err)
		}
		if v, ok := published.Load(key); !ok || v != "v1" {
			t.Fatalf("%s after its call: published %v %v", key, v, ok)
		}
		if v, ok, err := e.Store().Get([]byte("test/" + key)); err != nil || !ok || string(v) != "v1" {
			t.Fatalf("%s after its call: stored %q %v %v", key, v, ok, err)
		}
		again := &put{key: key, value: "v2"}
		if err := p.Do(ctx, e.ShardOf(key), again); err != nil || again.old != "v1" {
			t.Fatalf("second put of %s: old %q, %v", key, again.old, err)
		}
	}
	// A call completes before its round finishes the slices (the round's
	// last step): close the engine so that every round has ended.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range slices {
		c.mu.Lock()
		calls := c.calls
		c.mu.Unlock()
		if err := inRoundOrder(calls); err != nil {
			t.Errorf("shard %d: %v in %v", c.id, err, calls)
		}
	}
}

// inRoundOrder checks that calls to a slice follow the round: apply, then
// receive, write, publish, announce and finish, once each; the first
// finish is Start's.
func inRoundOrder(calls []string) error {
	order := []string{"receive", "write", "publish", "announce", "finish"}
	if len(calls) == 0 || calls[0] != "finish" {
		return errors.New("Start did not finish the slice first")
	}
	for i := 1; i < len(calls); {
		if calls[i] == "apply" { // a shard idle in a round does not apply
			i++
		}
		for _, want := range order {
			if i >= len(calls) || calls[i] != want {
				return fmt.Errorf("call %d: want %s", i, want)
			}
			i++
		}
	}
	return nil
}

// Receive runs with every shard parked: it sees what every other shard
// applied in the round, in both ways of running the later steps.
func TestReceiveSeesEveryShardsRound(t *testing.T) {
	for _, parallel := range []int{1, 1 << 30} {
		e, p, slices, _ := testWorkload(t, Config{Shards: 2, ParallelSize: parallel})
		release := park(t, p)
		var calls []*Call
		for i := range 20 {
			key := fmt.Sprint("k", i)
			c, err := p.Submit(ctx, e.ShardOf(key), &put{key: key, value: "v"})
			if err != nil {
				t.Fatal(err)
			}
			calls = append(calls, c)
		}
		release()
		for _, c := range calls {
			if err := c.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := slices[0].received.Load() + slices[1].received.Load(); got != 20 {
			t.Errorf("parallel size %d: Receive saw %d changes of other shards, want 20", parallel, got)
		}
	}
}

// park holds the engine in a round until the returned func runs (also at
// cleanup): commands queued meanwhile wait in their logs.
func park(t *testing.T, p *Port) func() {
	t.Helper()
	parked, release := make(chan struct{}), make(chan struct{})
	if _, err := p.Exclusive(ctx, func(time.Time) { close(parked); <-release }); err != nil {
		t.Fatal(err)
	}
	<-parked
	f := sync.OnceFunc(func() { close(release) })
	t.Cleanup(f)
	return f
}

// A full log refuses commands at once; the engine's own Tick is forced in.
func TestOverloadedAndTick(t *testing.T) {
	e, p, slices, _ := testWorkload(t, Config{Shards: 1, QueueCapacity: 1})
	release := park(t, p)
	first, err := p.Submit(ctx, 0, &put{key: "a", value: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(ctx, 0, &put{key: "b", value: "1"}); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("second command on a full log: %v", err)
	}
	e.shards[0].fireTick()
	if n := e.QueueLen(0); n != 2 {
		t.Fatalf("log holds %d commands, want the put and the tick", n)
	}
	release()
	if err := first.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if n := slices[0].ticks.Load(); n != 1 {
		t.Fatalf("%d ticks applied, want 1", n)
	}
}

// A deadline a slice returns from Finish brings a Tick once it passes.
func TestDeadlineBringsTick(t *testing.T) {
	_, p, slices, _ := testWorkload(t, Config{Shards: 1})
	if err := p.Do(ctx, 0, &put{key: "a", value: "1", deadline: time.Now().Add(10 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); slices[0].ticks.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) { // the subject here is the clock
			t.Fatal("no tick within 10s of a deadline 10ms away")
		}
	}
}

// After Close, nothing is queued any more.
func TestClosedRefuses(t *testing.T) {
	e, p, _, _ := testWorkload(t, Config{Shards: 1})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(ctx, 0, &put{key: "a"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("submit after close: %v", err)
	}
}
