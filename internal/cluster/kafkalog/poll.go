package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// poller gathers a ChainMember's round's commands: those polled from the
// partitions the group consumer owns, and those a Local source hands
// over.
type poller struct {
	cl *kgo.Client
	// last is the number of commands the previous round read (gather).
	last int
	// local is the running round's source of local commands (nil: none),
	// and took the partitions of those it took, cleared at each round's
	// start.
	local Local
	took  map[int32]bool
	// timer times a gathering round's gaps (gather).
	timer *time.Timer
	// fetched wakes a gathering round for the records the client
	// fetches (fetchWakes); nil without its hook.
	fetched *fetchWake
}

// consuming are the options of a member's client as a consumer of the
// commands topic in the cluster's group.
func consuming(c Config) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.ConsumerGroup(c.Group()),
		kgo.ConsumeTopics(c.CommandsTopic()),
		// A partition without committed offsets is read from its first command.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// The commands topic of a cluster whose rounds were transactions
		// (the upgrade) holds their forwards, those of aborted rounds
		// among them: read committed ones only.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	}
	if c.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(c.SessionTimeout), kgo.HeartbeatInterval(c.SessionTimeout/3))
	}
	return opts
}

// begin starts a round taking local's commands (nil: none).
func (g *poller) begin(local Local) {
	g.local = local
	if g.took == nil {
		g.took = map[int32]bool{}
	}
	clear(g.took)
}

// commands waits, until wait ends, for a round's first commands, then
// gathers more under ctx (gather): up to max in all, the local ones
// first. An error beside commands is another partition's: the commands
// were consumed when polled, and a round that dropped them would skip
// them. The error comes back with the next poll that finds no command.
func (g *poller) commands(wait, ctx context.Context, max int) ([]Command, error) {
	batch, err := g.next(wait, max)
	if len(batch) > 0 && !errors.Is(err, kgo.ErrClientClosed) {
		err = nil
		batch = g.gather(ctx, batch, max)
	}
	g.last = len(batch)
	return batch, err
}

// next waits, until ctx ends, for commands polled from the owned
// partitions or taken from the round's local source, and returns up to
// want of them, the local ones first. Commands taken locally are never
// waited past: with some, the poll returns only what the client holds.
// Under heldOnly it waits for none.
func (g *poller) next(ctx context.Context, want int) ([]Command, error) {
	if g.local == nil {
		return g.poll(ctx, want)
	}
	for {
		taken := g.local.Take(want)
		for _, c := range taken {
			g.took[c.Partition] = true
		}
		if len(taken) > 0 || ctx == heldOnly {
			polled, err := g.poll(heldOnly, want-len(taken))
			return append(taken, polled...), err
		}
		polled, woken, err := g.pollWoken(ctx, want)
		if len(polled) > 0 || !woken {
			return polled, err
		}
	}
}

// pollWoken is poll, ended early when the local source says commands
// wait (woken).
func (g *poller) pollWoken(ctx context.Context, want int) (polled []Command, woken bool, err error) {
	wctx, cancel := context.WithCancel(ctx)
	var wake sync.WaitGroup
	wake.Go(func() {
		select {
		case <-g.local.Waiting():
			woken = true
			cancel()
		case <-wctx.Done():
		}
	})
	polled, err = g.poll(wctx, want)
	cancel()
	wake.Wait()
	return polled, woken && ctx.Err() == nil, err
}

// poll reads commands, waiting until some come or ctx ends, and stops
// once it has want of them: it takes ceil((want-had)/PackMax) records at a
// time, the first waiting, the next only if the client holds them already,
// so it reads at most want+PackMax-1 commands (a packed record is never
// split). Under heldOnly it waits for none: it takes only what the
// client holds. With an error it returns the commands it read before it. A
// packed record that does not unpack is one command with no key and no
// value, which the round drops as malformed.
func (g *poller) poll(ctx context.Context, want int) ([]Command, error) {
	var batch []Command
	for wait := ctx; len(batch) < want; wait = heldOnly {
		fetches := g.cl.PollRecords(wait, (want-len(batch)+PackMax-1)/PackMax)
		if fetches.IsClientClosed() {
			return batch, kgo.ErrClientClosed
		}
		// Records polled count as consumed: they are applied even if ctx
		// ended meanwhile, or the next commit would skip them.
		if fetches.NumRecords() == 0 {
			if wait == heldOnly {
				return batch, nil
			}
			if err := ctx.Err(); err != nil && len(batch) == 0 {
				return nil, err
			}
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if err := unpacked(r, func(c Command) { batch = append(batch, c) }); err != nil {
				batch = append(batch, Command{Partition: r.Partition, Offset: r.Offset})
			}
		})
		for _, fe := range fetches.Errors() {
			if !transient(fe.Err) && !errors.Is(fe.Err, context.Canceled) && !errors.Is(fe.Err, context.DeadlineExceeded) {
				return batch, fmt.Errorf("kafkalog: reading %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
	}
	return batch, nil
}

// heldOnly, as a poll's context, waits for nothing: the poll takes only
// the records the client holds already. It is nil, which franz-go's
// PollRecords documents as "drain what is buffered and return"; a
// context that has ended would return its error and none of them.
var heldOnly context.Context

// transient reports a poll error that the client gets over by itself: a
// failed attempt to join the group, which it retries (the coordinator may
// be moving, as when a broker dies), or a retriable broker error. The poll
// reports them for information; a round just has no commands then.
func transient(err error) bool {
	var session *kgo.ErrGroupSession
	return errors.As(err, &session) || kerr.IsRetriable(err)
}
