package e2e

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Shape of the linearizability test: a few hot keys, concurrent clients,
// one kill -9 in the middle.
const (
	linClients     = 6
	linOpsAfter    = 60 // per client, after the restart
	linMinAcks     = 150
	linMaxAcks     = 500
	linCheckBudget = time.Minute
)

var linKeys = []string{"lin-x", "lin-y", "lin-z"}

// linInput is an operation as a client asked for it.
type linInput struct {
	op    byte // 'g'et, 'p'ut, 'd'elete
	key   string
	value string
}

// linOutput is what the server answered; unknown when no answer came (the
// server was killed first), so the operation may or may not have happened.
type linOutput struct {
	status  int
	body    string
	unknown bool
}

// kvModel is a map of keys to values, checked key by key (porcupine
// partitions the history by key). An unknown answer fits any state: the
// operation is pending forever, so the checker may place its effect
// anywhere after its call, or nowhere that any later read sees.
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(linInput).key
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(byKey))
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return kvValue{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(kvValue), input.(linInput), output.(linOutput)
		switch in.op {
		case 'p':
			return out.unknown || out.status == http.StatusCreated, kvValue{present: true, value: in.value}
		case 'd':
			return out.unknown || out.status == http.StatusAccepted, kvValue{}
		}
		switch {
		case out.unknown:
			return true, s
		case out.status == http.StatusNotFound:
			return !s.present, s
		case out.status == http.StatusOK:
			return s.present && s.value == out.body, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		if out.unknown {
			return fmt.Sprintf("%c %s %q → ?", in.op, in.key, in.value)
		}
		return fmt.Sprintf("%c %s %q → %d %q", in.op, in.key, in.value, out.status, out.body)
	},
}

// linHistory collects operations from concurrent clients, timed on one
// monotonic clock.
type linHistory struct {
	t0  time.Time
	mu  sync.Mutex
	ops []porcupine.Operation
}

func (h *linHistory) now() int64 { return int64(time.Since(h.t0)) }

func (h *linHistory) add(op porcupine.Operation) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// do runs one random operation as client id and records it. It reports
// false if no answer came: the operation is recorded as pending.
func (h *linHistory) do(c *Client, id int, rng *rand.Rand, n int) bool {
	in := linInput{op: "gpd"[rng.IntN(3)], key: linKeys[rng.IntN(len(linKeys))]}
	call := h.now()
	var r *Response
	var err error
	switch in.op {
	case 'g':
		r, err = c.kvGet(in.key)
	case 'p':
		in.value = fmt.Sprintf("c%d-%d", id, n)
		r, err = c.kvPut(in.key, []byte(in.value))
	default:
		r, err = c.kvDelete(in.key)
	}
	op := porcupine.Operation{ClientId: id, Input: in, Call: call, Return: h.now()}
	if err != nil {
		op.Output, op.Return = linOutput{unknown: true}, math.MaxInt64
		h.add(op)
		return false
	}
	op.Output = linOutput{status: r.Status, body: string(r.Body)}
	h.add(op)
	return true
}

// TestKVLinearizableAcrossKill records the history of concurrent clients
// doing random GETs, PUTs and DELETEs on three keys, through a kill -9 and
// a restart, and checks it with porcupine: every answer must fit one
// order of the operations that respects real time, across the crash too.
// Operations in flight at the kill are pending (they may or may not have
// happened); an operation that took effect must stay in effect.
func TestKVLinearizableAcrossKill(t *testing.T) {
	skipIfShort(t)
	rng := newRand(t)
	dir := t.TempDir()
	srv := start(t, dir)
	h := &linHistory{t0: time.Now()}
	killAt := int64(linMinAcks + rng.IntN(linMaxAcks-linMinAcks+1))
	seed := rng.Uint64()
	var acks atomic.Int64
	untilKill(t, srv, killAt, func(onAck func(int64)) {
		var wg sync.WaitGroup
		for id := range linClients {
			wg.Go(func() {
				cr := rand.New(rand.NewPCG(seed, uint64(id)))
				for n := 0; h.do(srv.c, id, cr, n); n++ {
					onAck(acks.Add(1))
				}
			})
		}
		wg.Wait()
	})
	srv = start(t, dir)
	var wg sync.WaitGroup
	for id := range linClients {
		wg.Go(func() {
			cr := rand.New(rand.NewPCG(seed, uint64(linClients+id)))
			for n := range linOpsAfter {
				if !h.do(srv.c, id, cr, 1_000_000+n) {
					t.Errorf("client %d: no answer after the restart", id)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d operations, %d acknowledged before the kill", len(h.ops), acks.Load())
	switch res := porcupine.CheckOperationsTimeout(kvModel, h.ops, linCheckBudget); res {
	case porcupine.Ok:
	case porcupine.Illegal:
		t.Errorf("the history of %d operations is not linearizable", len(h.ops))
	default:
		t.Errorf("porcupine could not decide within %v (%v)", linCheckBudget, res)
	}
}

// TestKVModelRejectsLostWrite checks that the model used above can fail:
// a read after an acknowledged PUT that shows the older value is refused,
// as is one that shows a value no PUT wrote.
func TestKVModelRejectsLostWrite(t *testing.T) {
	op := func(in linInput, out linOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: in, Output: out, Call: call, Return: ret}
	}
	put := op(linInput{op: 'p', key: "k", value: "new"}, linOutput{status: 201}, 0, 10)
	pending := op(linInput{op: 'p', key: "k", value: "maybe"}, linOutput{unknown: true}, 20, math.MaxInt64)
	cases := []struct {
		name    string
		history []porcupine.Operation
		ok      bool
	}{
		{"read sees the write", []porcupine.Operation{put, op(linInput{op: 'g', key: "k"}, linOutput{status: 200, body: "new"}, 11, 12)}, true},
		{"write lost", []porcupine.Operation{put, op(linInput{op: 'g', key: "k"}, linOutput{status: 404}, 11, 12)}, false},
		{"value from nowhere", []porcupine.Operation{put, op(linInput{op: 'g', key: "k"}, linOutput{status: 200, body: "x"}, 11, 12)}, false},
		{"pending write seen", []porcupine.Operation{put, pending, op(linInput{op: 'g', key: "k"}, linOutput{status: 200, body: "maybe"}, 30, 31)}, true},
		{"pending write not seen", []porcupine.Operation{put, pending, op(linInput{op: 'g', key: "k"}, linOutput{status: 200, body: "new"}, 30, 31)}, true},
		{"pending write seen, then lost", []porcupine.Operation{put, pending,
			op(linInput{op: 'g', key: "k"}, linOutput{status: 200, body: "maybe"}, 30, 31),
			op(linInput{op: 'g', key: "k"}, linOutput{status: 200, body: "new"}, 40, 41)}, false},
	}
	for _, c := range cases {
		if got := porcupine.CheckOperations(kvModel, c.history); got != c.ok {
			t.Errorf("%s: linearizable %v, want %v", c.name, got, c.ok)
		}
	}
}
