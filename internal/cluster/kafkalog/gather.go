package kafkalog

import (
	"context"
	"time"
)

// A busy member gathers bigger rounds. Every round is a transaction, whose
// fixed cost (the requests to the transaction coordinator, and one commit
// marker per partition the round wrote) is most of what a command costs
// the brokers. When the previous round read at least busyRound commands,
// a round that polled fewer than its max keeps reading for roundLinger
// before it applies them: under load a command waits a little for
// company, while at low load (small previous rounds) a command is
// applied as soon as it is read.
var (
	busyRound   = 32
	roundLinger = 20 * time.Millisecond
)

// gather adds to batch the commands of the records that come within
// roundLinger, up to records more, if the previous round was busy.
func (m *Member) gather(ctx context.Context, batch []Command, records int) []Command {
	if m.last < busyRound {
		return batch
	}
	linger, cancel := context.WithTimeout(ctx, roundLinger)
	defer cancel()
	for records > 0 {
		more, n, err := m.poll(linger, records)
		batch = append(batch, more...)
		records -= n
		if err != nil || n == 0 {
			break
		}
	}
	return batch
}
