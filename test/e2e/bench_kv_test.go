package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// kvBenchResult is what these tests read of bench kv's --out file.
type kvBenchResult struct {
	Params struct {
		Extra map[string]string `json:"extra"`
	} `json:"params"`
	Totals struct {
		Requests int64 `json:"requests"`
		Failed   int64 `json:"failed"`
	} `json:"totals"`
	KV *struct {
		Unsent int64 `json:"unsent"`
		Misses int64 `json:"misses"`
	} `json:"kv"`
}

// bench kv, one connection at a time and pipelined, against the real
// binary: every PUT must land whole on the key it was for, and every GET
// of a key written must find it. The PUT run prefills every key first, so
// that which keys exist does not depend on how many requests the open
// model managed to send on a busy machine (its unsent count is a
// measurement, not a correctness property, and is not asserted).
func TestBenchKVAgainstServer(t *testing.T) {
	const keys, valueSize = 20, 64
	for _, pipeline := range []string{"1", "8"} {
		t.Run("pipeline="+pipeline, func(t *testing.T) {
			srv := start(t, t.TempDir(), "--shards", "2")
			run := func(args ...string) kvBenchResult {
				t.Helper()
				out := filepath.Join(t.TempDir(), "kv.json")
				cmd := exec.Command(binPath, append([]string{"bench", "kv", "--target", srv.url, "--connections", "2",
					"--pipeline", pipeline, "--keys", fmt.Sprint(keys), "--value-size", fmt.Sprint(valueSize),
					"--rate", "400", "--duration", "1s", "--out", out}, args...)...)
				cmd.Env = childEnv()
				if text, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("bench kv %v: %v\n%s", args, err, text)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				var res kvBenchResult
				if err := json.Unmarshal(b, &res); err != nil || res.KV == nil {
					t.Fatalf("result file: %v %.300s", err, b)
				}
				if res.Totals.Requests == 0 || res.Totals.Failed != 0 {
					t.Fatalf("bench kv %v: %+v, %+v; want requests, none failed", args, res.Totals, *res.KV)
				}
				if pipeline != "1" && res.Params.Extra["pipeline"] != pipeline {
					t.Errorf("result parameters %v do not say the run was pipelined", res.Params.Extra)
				}
				return res
			}

			run("--op", "put", "--prefill", fmt.Sprint(keys))
			for i := range keys {
				key := fmt.Sprintf("k%010d", i)
				r, err := srv.c.kvGet(key)
				if !wantStatus(t, r, err, 200) || len(r.Body) != valueSize {
					t.Fatalf("GET %s after the PUTs: want %d bytes", key, valueSize)
				}
			}
			if res := run("--op", "get"); res.KV.Misses != 0 {
				t.Fatalf("%d GETs missed keys that were all written", res.KV.Misses)
			}
		})
	}
}
