package kafkalog

import (
	"context"
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
// max of them (poll), if the previous round was busy.
func (g *poller) gather(ctx context.Context, batch []Command, max int) []Command {
	if g.last < busyRound {
		return batch
	}
	linger, cancel := context.WithTimeout(ctx, roundLinger)
	defer cancel()
	for len(batch) < max {
		gap, cancelGap := context.WithTimeout(linger, gapAfter(len(batch)))
		more, err := g.next(gap, max-len(batch))
		cancelGap()
		batch = append(batch, more...)
		if err != nil || len(more) == 0 {
			break
		}
	}
	return batch
}

// gapAfter is how long a round holding n commands waits for the next.
func gapAfter(n int) time.Duration {
	if n < fullRound {
		return smallGap
	}
	return gatherGap
}
