package engine

import (
	"context"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/surge-dev/surge/internal/telemetry"
)

// Slice is one workload's state in one shard, and what a round does with
// it (see the package doc for the round and the contract).
type Slice interface {
	// Apply applies commands the workload queued on this shard, in log
	// order, at the round's time now, writing each one's outcome into it.
	// It may be called more than once in a round, for successive runs of
	// the log; a Tick is the passage of time.
	Apply(cmds []Command, now time.Time)
	// Size is how much the round's later steps have to do in this slice,
	// in items of about a microsecond each (history entries, credits).
	Size() int
	// Receive applies what the other shards' Apply handed over to this
	// one. Every shard is parked: it may read the other slices of its
	// workload.
	Receive()
	// Write adds the round's changes to b, the round's storage batch.
	Write(b *pebble.Batch)
	// Publish shows the round's changes, now durable, to readers.
	Publish(now time.Time)
	// Announce runs once every slice has published the round: what
	// readers may act on only when the whole round shows.
	Announce()
	// Finish readies the slice for the next round once every call of
	// this one has completed, and returns when it next needs a Tick (zero
	// for never).
	Finish() time.Time
}

// Command is one entry of a shard's log: plain data a workload defines
// and its Slice applies.
type Command any

// Tick is the command that tells every slice of a shard the time: a
// deadline one of them returned from Finish has passed.
type Tick struct{}

// Envelope carries a command through a Log, with the call waiting for its
// outcome (nil when nobody waits).
type Envelope struct {
	Cmd  Command
	call *Call
	// workload is the index of the workload that queued Cmd, or
	// allWorkloads for a Tick.
	workload uint8
	// link is the requesting span, when tracing is on: the round's span of
	// the shard links to it.
	link trace.Link
}

// allWorkloads marks an envelope every slice of the shard applies.
const allWorkloads = 255

// Call is a command's caller waiting for its outcome. It completes once
// the round that applied the command is durable and published, or failed
// to be (err).
type Call struct {
	done chan struct{}
	err  error
}

func newCall() *Call { return &Call{done: make(chan struct{})} }

func (c *Call) complete() { close(c.done) }

// fail completes c with err.
func (c *Call) fail(err error) {
	c.err = err
	c.complete()
}

// Wait blocks until c completes or ctx ends. The command goes on even if
// the caller gives up: it is already in the shard's log. It returns a
// *store.Fault if the round's commit failed: then nothing of the command
// was stored or shown.
func (c *Call) Wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Port is a workload's way into the engine: it queues the workload's
// commands on the shards' logs.
type Port struct {
	e        *Engine
	workload uint8
}

// Submit queues cmd on shard's log; the returned call completes once the
// round that applied it is published. It fails with ErrOverloaded when
// the log is full and ErrClosed once the engine is closing.
func (p *Port) Submit(ctx context.Context, shard int, cmd Command) (*Call, error) {
	return p.e.enqueue(ctx, p.e.shards[shard].log, Envelope{Cmd: cmd, call: newCall(), workload: p.workload})
}

// Do is Submit, then waiting for the call.
func (p *Port) Do(ctx context.Context, shard int, cmd Command) error {
	c, err := p.Submit(ctx, shard, cmd)
	if err != nil {
		return err
	}
	return c.Wait(ctx)
}

// Post queues cmd on shard's log for nobody to wait on: the workload
// tells readers of its outcome itself, when it publishes.
func (p *Port) Post(shard int, cmd Command) error {
	if err := p.e.refusal(); err != nil {
		return err
	}
	return p.e.shards[shard].log.Append(Envelope{Cmd: cmd, workload: p.workload}, false)
}

// Exclusive queues run to run in a round with every shard parked, once
// they have all received what crosses to them (step 2 of the round): a
// command that needs every slice of the workload at once. The returned
// call completes once the round is published.
func (p *Port) Exclusive(ctx context.Context, run func(now time.Time)) (*Call, error) {
	return p.e.enqueue(ctx, p.e.exclusive, Envelope{Cmd: exclusive(run), call: newCall()})
}

// exclusive is the command of Port.Exclusive. In-process only, since it
// carries a function.
type exclusive func(now time.Time)

func (e *Engine) enqueue(ctx context.Context, l Log, env Envelope) (*Call, error) {
	if err := e.refusal(); err != nil {
		return nil, err
	}
	if telemetry.TracingEnabled() {
		env.link, _ = telemetry.Link(ctx)
	}
	if err := l.Append(env, false); err != nil {
		return nil, err
	}
	return env.call, nil
}
