package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// Shape of the key-value crash test.
const (
	kvCrashRounds  = 3
	kvCrashWorkers = 8
	kvCrashKeys    = 16 // per worker
	kvCrashMinAcks = 300
	kvCrashMaxAcks = 1500
)

// kvKeyState is what the test knows of one key: its value as of the last
// acknowledged write, and the write in flight when the server was killed,
// if any, which may or may not have taken effect.
type kvKeyState struct {
	acked, pending kvValue
	inFlight       bool
}

// kvValue is a key's content: absent, or a value.
type kvValue struct {
	present bool
	value   string
}

func (v kvValue) String() string {
	if !v.present {
		return "absent"
	}
	return fmt.Sprintf("%q", v.value)
}

// TestKVCrashRecovery kills the server with SIGKILL while concurrent
// workers PUT and DELETE, restarts it on the same data and checks every
// key: each acknowledged PUT reads back and each acknowledged DELETE stays
// deleted; a write in flight at the kill either happened or did not.
// Each worker owns its keys, so the expected state of every key is known
// exactly.
func TestKVCrashRecovery(t *testing.T) {
	skipIfShort(t)
	rng := newRand(t)
	dir := t.TempDir()
	srv := start(t, dir)
	states := make([][]kvKeyState, kvCrashWorkers)
	for w := range states {
		states[w] = make([]kvKeyState, kvCrashKeys)
	}
	for round := range kvCrashRounds {
		killAt := int64(kvCrashMinAcks + rng.IntN(kvCrashMaxAcks-kvCrashMinAcks+1))
		seed := rng.Uint64()
		var acks atomic.Int64
		untilKill(t, srv, killAt, func(onAck func(int64)) {
			var wg sync.WaitGroup
			for w := range kvCrashWorkers {
				wg.Go(func() {
					wr := rand.New(rand.NewPCG(seed, uint64(w)))
					for i := 0; ; i++ {
						k := wr.IntN(kvCrashKeys)
						st := &states[w][k]
						st.pending = kvValue{}
						if wr.IntN(3) != 0 {
							st.pending = kvValue{present: true, value: fmt.Sprintf("r%d-w%d-%d", round, w, i)}
						}
						st.inFlight = true
						var r *Response
						var err error
						if st.pending.present {
							r, err = srv.c.kvPut(kvCrashKey(w, k), []byte(st.pending.value))
						} else {
							r, err = srv.c.kvDelete(kvCrashKey(w, k))
						}
						if err != nil {
							return // the server is gone: this write stays in flight
						}
						if r.Status != http.StatusCreated && r.Status != http.StatusAccepted {
							t.Errorf("write answered outside the contract: %v", r)
							return
						}
						st.acked, st.inFlight = st.pending, false
						onAck(acks.Add(1))
					}
				})
			}
			wg.Wait()
		})
		t.Logf("round %d: killed after %d acknowledged writes", round, acks.Load())
		srv = start(t, dir)
		wantKVStates(t, srv.c, states)
		if t.Failed() {
			t.FailNow()
		}
	}
}

func kvCrashKey(worker, k int) string { return fmt.Sprintf("crash-%d-%d", worker, k) }

// wantKVStates reads every key back and checks it against what the test
// knows; a write in flight is then settled by what the server shows.
func wantKVStates(t *testing.T, c *Client, states [][]kvKeyState) {
	t.Helper()
	for w := range states {
		for k := range states[w] {
			st := &states[w][k]
			got := kvRead(t, c, kvCrashKey(w, k))
			switch {
			case got == st.acked:
			case st.inFlight && got == st.pending:
			default:
				t.Errorf("%s after restart is %v; last acknowledged %v, in flight %v (%v)",
					kvCrashKey(w, k), got, st.acked, st.pending, st.inFlight)
			}
			st.acked, st.inFlight = got, false
		}
	}
}

// kvRead returns key's content as the server shows it.
func kvRead(t *testing.T, c *Client, key string) kvValue {
	t.Helper()
	r, err := c.kvGet(key)
	if err != nil {
		t.Fatal(err)
	}
	switch r.Status {
	case http.StatusOK:
		return kvValue{present: true, value: string(r.Body)}
	case http.StatusNotFound:
		return kvValue{}
	}
	t.Fatalf("GET %s: %v", key, r)
	return kvValue{}
}
