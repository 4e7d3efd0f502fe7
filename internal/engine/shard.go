package engine

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// shard is one log and every workload's slice of the keys that hash to it.
// In each round its goroutine applies the commands waiting in its log to
// its slices; the rest of the round runs with the shard parked (round.go).
type shard struct {
	id     int
	eng    *Engine
	log    Log
	slices []Slice
	// work hands the shard a step of a round to do, with the round's time;
	// the shard reports on eng.stepDone when it is done (round.go).
	work chan stepWork
	// envs are the commands the shard applied in this round; cmds gathers
	// a run of them for one workload.
	envs []Envelope
	cmds []Command
	// wb is the storage batch the shard writes the round's changes to.
	wb    *pebble.Batch
	trace batchTrace
	// tick fires a Tick at tickAt, the earliest deadline of the slices.
	tick   *time.Timer
	tickAt time.Time
}

func newShard(id int, e *Engine) *shard {
	return &shard{id: id, eng: e, log: newMemLog(e.cfg.QueueCapacity, e.ready), work: make(chan stepWork, 1)}
}

// stepWork is a step of a round for a shard to do.
type stepWork struct {
	step step
	now  time.Time
}

func (s *shard) run() {
	defer s.eng.wg.Done()
	for w := range s.work {
		s.do(w.step, w.now)
		s.eng.stepDone <- struct{}{}
	}
}

func (s *shard) do(st step, now time.Time) {
	switch st {
	case stepApply:
		s.applyLog(now)
	case stepReceive:
		s.receive()
	case stepWrite:
		s.write()
	case stepReceiveWrite:
		s.receive()
		s.write()
	case stepPublish:
		for _, sl := range s.slices {
			sl.Publish(now)
		}
	case stepAnnounce:
		for _, sl := range s.slices {
			sl.Announce()
		}
	default:
		panic(fmt.Sprintf("engine: unknown step %d", st))
	}
}

// applyLog applies the commands waiting in the shard's log, up to
// MaxBatch: each run of one workload's commands to its slice, a Tick to
// every slice.
func (s *shard) applyLog(now time.Time) {
	s.envs = s.log.Read(s.eng.cfg.MaxBatch)
	s.trace = startBatchTrace(s.id, s.envs)
	for i := 0; i < len(s.envs); {
		w := s.envs[i].workload
		s.cmds = s.cmds[:0]
		for ; i < len(s.envs) && s.envs[i].workload == w; i++ {
			s.cmds = append(s.cmds, s.envs[i].Cmd)
		}
		if w == allWorkloads {
			s.tickAt = time.Time{}
			for _, sl := range s.slices {
				sl.Apply(s.cmds, now)
			}
			continue
		}
		s.slices[w].Apply(s.cmds, now)
	}
	clear(s.cmds)
	s.eng.metrics.batchSize.Observe(float64(len(s.envs)))
}

func (s *shard) receive() {
	for _, sl := range s.slices {
		sl.Receive()
	}
}

func (s *shard) write() {
	for _, sl := range s.slices {
		sl.Write(s.wb)
	}
}

// size is the round's size in the shard's slices.
func (s *shard) size() int {
	n := 0
	for _, sl := range s.slices {
		n += sl.Size()
	}
	return n
}

// finish answers the round's calls, once its changes are durable and
// published, and readies the shard for the next round.
func (s *shard) finish() {
	for i := range s.envs {
		if c := s.envs[i].call; c != nil {
			c.complete()
		}
	}
	s.trace.end()
	s.trace, s.envs = batchTrace{}, nil
	s.scheduleTick(s.finishSlices())
}

// finishSlices finishes every slice's round and returns the earliest
// deadline they ask a Tick for.
func (s *shard) finishSlices() time.Time {
	var next time.Time
	for _, sl := range s.slices {
		if d := sl.Finish(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next
}

// scheduleTick arms the timer that queues a Tick at next.
func (s *shard) scheduleTick(next time.Time) {
	if next.IsZero() || next.Equal(s.tickAt) {
		return
	}
	s.tickAt = next
	d := time.Until(next)
	if s.tick == nil {
		s.tick = time.AfterFunc(d, s.fireTick)
		return
	}
	s.tick.Reset(d)
}

// fireTick queues a Tick; it is forced, since the engine must not lose it.
func (s *shard) fireTick() {
	_ = s.log.Append(Envelope{Cmd: Tick{}, workload: allWorkloads}, true)
}
