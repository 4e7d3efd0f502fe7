package kafkalog

import (
	"context"
	"slices"
	"time"
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
// the poller keeps and on the local source's wake, and takes, at each,
// what waits without waiting more: the local commands and those the
// client holds. A poll that waits would cost the round a context and
// goroutines at each burst of commands, more than the burst's commands
// save. Commands the client fetches are thus taken at the next local
// wake or gap's end; the gap's end ends the round unless it found some.
func (g *poller) gather(ctx context.Context, batch []Command, max int) []Command {
	if g.last < busyRound {
		return batch
	}
	var wake <-chan struct{}
	if g.local != nil {
		wake = g.local.Waiting()
	}
	end := time.Now().Add(roundLinger)
	gap := g.arm(min(gapAfter(len(batch)), roundLinger))
	defer gap.Stop()
	for len(batch) < max {
		timedOut := false
		select {
		case <-ctx.Done():
			return batch
		case <-wake:
		case <-gap.C:
			timedOut = true
		}
		more, err := g.next(heldOnly, max-len(batch))
		batch = append(batch, more...)
		left := time.Until(end)
		switch {
		case err != nil || left <= 0 || timedOut && !polled(more):
			return batch
		case len(more) > 0:
			gap.Reset(min(gapAfter(len(batch)), left))
		}
	}
	return batch
}

// polled reports whether cmds hold a command read from the commands
// topic (local ones have no offset). At a gap's end only those say that
// commands kept coming: a local one then came at the gap's end, its wake
// not yet taken, and a round that went on for it would go on for as long
// as a node that falls behind keeps finding some.
func polled(cmds []Command) bool {
	return slices.ContainsFunc(cmds, func(c Command) bool { return c.Offset >= 0 })
}

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
