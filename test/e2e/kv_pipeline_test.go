package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"testing"
)

// TestKVPipelinedWritesShareFsyncsAndSurviveKill sends PUTs and DELETEs
// pipelined in one write on one connection, as wrk2 or a proxy may. The
// server defers each acknowledgement until the connection's replies go
// out together, so the writes must share WAL fsyncs although one
// connection sent them all; and a SIGKILL as soon as the last reply is in
// must lose none of them.
func TestKVPipelinedWritesShareFsyncsAndSurviveKill(t *testing.T) {
	const n = 64
	dir := t.TempDir()
	srv := start(t, dir)
	for i := range n / 4 { // keys the pipelined DELETEs will remove
		r, err := srv.c.kvPut(fmt.Sprint("pd-", i), []byte("old"))
		must(t, r, err, http.StatusCreated, "")
	}
	before := walFsyncs(t, srv)
	pipelineWrites(t, srv, "pa-", n, 0)
	syncs := walFsyncs(t, srv) - before
	t.Logf("%d pipelined PUTs on one connection took %v WAL fsyncs", n, syncs)
	if syncs >= n/2 {
		t.Errorf("%d pipelined PUTs took %v WAL fsyncs: few or none were shared", n, syncs)
	}

	pipelineWrites(t, srv, "pb-", n, n/4)
	srv.kill()
	srv = start(t, dir)
	for _, prefix := range []string{"pa-", "pb-"} {
		for i := range n {
			r, err := srv.c.kvGet(fmt.Sprint(prefix, i))
			must(t, r, err, http.StatusOK, "")
			if string(r.Body) != pipelinedValue(i) {
				t.Errorf("%s%d = %q after the kill, want %q", prefix, i, r.Body, pipelinedValue(i))
			}
		}
	}
	for i := range n / 4 {
		r, err := srv.c.kvGet(fmt.Sprint("pd-", i))
		wantStatus(t, r, err, http.StatusNotFound)
	}
}

// pipelineWrites writes puts PUTs of keys prefix0… and deletes DELETEs of
// keys pd-0… to srv in one write on a new connection, and reads every
// reply, which must acknowledge its write.
func pipelineWrites(t *testing.T, srv *server, prefix string, puts, deletes int) {
	t.Helper()
	conn, host := dialRaw(t, srv.url)
	defer conn.Close()
	var reqs bytes.Buffer
	for i := range puts {
		fmt.Fprintf(&reqs, "PUT /v0/entity?id=%s%d HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s",
			prefix, i, host, len(pipelinedValue(i)), pipelinedValue(i))
	}
	for i := range deletes {
		fmt.Fprintf(&reqs, "DELETE /v0/entity?id=pd-%d HTTP/1.1\r\nHost: %s\r\n\r\n", i, host)
	}
	if _, err := conn.Write(reqs.Bytes()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	for i := range puts + deletes {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		_ = resp.Body.Close()
		want := http.StatusCreated
		if i >= puts {
			want = http.StatusAccepted
		}
		if resp.StatusCode != want {
			t.Fatalf("reply %d: %s, want %d", i, resp.Status, want)
		}
	}
}

func pipelinedValue(i int) string { return fmt.Sprintf("value %d of a pipelined PUT", i) }

// walFsyncs reads surge_storage_wal_fsyncs_total from the server's
// /metrics.
func walFsyncs(t *testing.T, srv *server) float64 {
	t.Helper()
	f, ok := scrapeMetrics(t, srv)["surge_storage_wal_fsyncs_total"]
	if !ok || len(f.GetMetric()) != 1 {
		t.Fatal("/metrics has no surge_storage_wal_fsyncs_total")
	}
	return f.GetMetric()[0].GetCounter().GetValue()
}
