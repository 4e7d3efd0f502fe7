package kafkalog

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A busy member gathers bigger rounds. Every round has a fixed cost at the
// brokers (its produce request, one record batch and trailer per
// partition it writes, and the fetches that woke it), shared by the
// commands it holds. When the previous round read at least busyRound commands,
// a round that polled fewer than its max keeps reading while commands
// keep coming: until a gap passes without any, or roundLinger in all. The
// gap is smallGap while the round holds fewer than fullRound commands, so
// that a small round waits for the clients its predecessor's replies set
// free, and gatherGap after. Under load a command waits a little for
// company (the commands of the other nodes' producers, which send at
// their own times), a burst is read whole and not waited past, and at low
// load (small previous rounds) a command is applied as soon as it is
// read.
var (
	busyRound   = 8
	fullRound   = 128
	smallGap    = 8 * time.Millisecond
	gatherGap   = 4 * time.Millisecond
	roundLinger = 30 * time.Millisecond
)

// gather adds to batch the commands that come, as above, until it has
// max of them (poll), if the previous round was busy. It waits on a timer
// the poller keeps, on the local source's wake and on the client's wake
// for fetched records (fetched), and takes, at each, what waits without
// waiting more: the local commands and those the client holds. A poll
// that waits would cost the round a context and goroutines at each burst
// of commands, more than the burst's commands save. A gap's end takes
// what waits and ends the round: both kinds of command announce
// themselves by a wake, and one that comes as the gap ends, its wake not
// yet taken, would otherwise keep a node that falls behind gathering
// until the linger.
func (g *poller) gather(ctx context.Context, batch []Command, max int) []Command {
	if g.last < busyRound {
		return batch
	}
	var wake <-chan struct{}
	if g.local != nil {
		wake = g.local.Waiting()
	}
	end := time.Now().Add(roundLinger)
	gapEnd := time.Now().Add(min(gapAfter(len(batch)), roundLinger))
	gap := g.arm(time.Until(gapEnd))
	defer gap.Stop()
	for len(batch) < max {
		fetched, timedOut := false, false
		select {
		case <-ctx.Done():
			return batch
		case <-wake:
		case <-g.fetched.waiting():
			fetched = true
		case <-gap.C:
			timedOut = true
		}
		want := max - len(batch)
		more, err := g.next(heldOnly, want)
		if fetched && err == nil && len(more) < want && g.fetched.unpolled() {
			var late []Command
			late, err = g.nextUntil(ctx, gapEnd, want-len(more))
			more = append(more, late...)
		}
		batch = append(batch, more...)
		left := time.Until(end)
		switch {
		case err != nil || left <= 0 || timedOut:
			return batch
		case len(more) > 0:
			d := min(gapAfter(len(batch)), left)
			gapEnd = time.Now().Add(d)
			gap.Reset(d)
		}
	}
	return batch
}

// nextUntil is next, waiting until the gap's end at most. A round takes
// it after a wake for fetched records that found none to poll: the
// client calls its hook just before the records it tells of can be
// polled, and a round that ran in between would otherwise miss them until
// its next wake or its gap's end. It waits only then, not at each wake,
// for the cost of a poll that waits (gather).
func (g *poller) nextUntil(ctx context.Context, gapEnd time.Time, want int) ([]Command, error) {
	wait, cancel := context.WithDeadline(ctx, gapEnd)
	defer cancel()
	return g.next(wait, want)
}

// fetchWake is a client hook that wakes a gathering round when the client
// buffers records it fetched: the commands topic's counterpart of the
// local source's wake. It counts the records buffered that no poll has
// taken and the client has not dropped yet.
type fetchWake struct {
	wake chan struct{}
	held atomic.Int64
}

// fetchWakes returns the option that hooks a wake for fetched records
// (fetched) into g's client.
func (g *poller) fetchWakes() kgo.Opt {
	g.fetched = &fetchWake{wake: make(chan struct{}, 1)}
	return kgo.WithHooks(g.fetched)
}

// OnFetchRecordBuffered implements kgo.HookFetchRecordBuffered. It runs on
// the client's fetch goroutine once per record: a send that finds the
// wake full takes no lock.
func (w *fetchWake) OnFetchRecordBuffered(*kgo.Record) {
	w.held.Add(1)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// OnFetchRecordUnbuffered implements kgo.HookFetchRecordUnbuffered: a
// poll runs it, before it returns, for the records it takes or strips
// (a paused partition's). The records the client drops on an assignment's
// change (a revoke, a seek) come off on a goroutine of the client's own,
// a little later: until then the count holds records no poll can take,
// and a wake that finds none spends one waiting poll, bounded by the
// gap's end, when the round ends anyway.
func (w *fetchWake) OnFetchRecordUnbuffered(*kgo.Record, bool) { w.held.Add(-1) }

// waiting is the wake: it holds a value once records were buffered since
// a round last took it (nil without the hook, which never wakes).
func (w *fetchWake) waiting() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.wake
}

// unpolled reports records buffered that no poll has taken nor the
// client dropped: after a poll of what the client holds that took fewer
// than it wanted, and so found it empty, records the client is about to
// hand over.
func (w *fetchWake) unpolled() bool { return w != nil && w.held.Load() > 0 }

// arm returns the poller's timer, set to fire after d.
func (g *poller) arm(d time.Duration) *time.Timer {
	if g.timer == nil {
		g.timer = time.NewTimer(d)
	} else {
		g.timer.Reset(d)
	}
	return g.timer
}

// gapAfter is how long a round holding n commands waits for the next.
func gapAfter(n int) time.Duration {
	if n < fullRound {
		return smallGap
	}
	return gatherGap
}
