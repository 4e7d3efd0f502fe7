package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFlippedWALByteRefusesToStart writes acknowledged transfers and
// key-value entries, kills the server with SIGKILL, flips one byte in the
// middle of each store's newest WAL and restarts: the server must refuse
// to start, naming the file and offset, rather than start without the
// acknowledged writes after the damage; --accept-wal-loss must start it.
func TestFlippedWALByteRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	killAfterWrites(t, dir, true)
	ledgerWAL := flipInNewestWAL(t, dir)
	flipInNewestWAL(t, filepath.Join(dir, "kv"))

	refused := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", dir}, nil)
	refused.wait()
	out := refused.out.String()
	if refused.err == nil || !strings.Contains(out, ledgerWAL) || !strings.Contains(out, "damaged at offset") {
		t.Fatalf("a server over a damaged WAL must refuse to start naming it (%s); exit %v, output:\n%s", ledgerWAL, refused.err, out)
	}
	accepted := start(t, dir, "--accept-wal-loss")
	a, r, err := accepted.c.Account("alice")
	if err != nil || r.Status != http.StatusOK || a.Balance >= 50 {
		t.Fatalf("after accepting the loss: %+v %v %v", a, r, err)
	}
	if !strings.Contains(accepted.out.String(), "accepting the loss of WAL "+ledgerWAL) {
		t.Errorf("accepting the loss must be logged, naming the WAL")
	}
}

// TestFlippedLastWALRecordIsRefusedOrLoud: a byte flipped in the last
// record of the ledger's newest WAL (its last non-zero byte) after a kill
// -9 must not be taken silently for a torn write: the server refuses to
// start naming the record, or starts and says on stderr that it dropped
// it.
func TestFlippedLastWALRecordIsRefusedOrLoud(t *testing.T) {
	dir := t.TempDir()
	killAfterWrites(t, dir, false)
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no WAL in %s: %v", dir, err)
	}
	slices.Sort(logs)
	wal := logs[len(logs)-1]
	b, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	last := len(b) - 1
	for last > 0 && b[last] == 0 { // preallocated space
		last--
	}
	b[last] ^= 0x40
	if err := os.WriteFile(wal, b, 0o644); err != nil {
		t.Fatal(err)
	}
	next := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", dir}, nil)
	select { // it listens before it opens storage
	case next.url = <-next.listen:
		next.c = newClient(next.url, "")
	case <-next.exited:
	}
	poll(t, startTimeout, "the restarted server to refuse or be ready", func() (bool, string) {
		if next.isExited() {
			return true, "exited"
		}
		resp, err := next.c.raw(http.MethodGet, "/readyz", "", nil)
		if err != nil {
			return false, err.Error()
		}
		return resp.Status == http.StatusOK, resp.String()
	})
	if next.isExited() {
		if out := next.out.String(); next.err == nil || !strings.Contains(out, wal) || !strings.Contains(out, "last record") {
			t.Fatalf("refused without naming the last record of %s; exit %v, output:\n%s", wal, next.err, out)
		}
		return
	}
	if out := next.out.String(); !strings.Contains(out, "dropping its last record") || !strings.Contains(out, wal) {
		t.Fatalf("started over a flipped last record of %s without saying so; output:\n%s", wal, out)
	}
}

// killAfterWrites starts a server on dir, makes 50 acknowledged
// transfers to alice (and key-value entries, if kv) and kills it with
// SIGKILL.
func killAfterWrites(t *testing.T, dir string, kv bool) {
	t.Helper()
	srv := start(t, dir)
	mustCreateAccount(t, srv.c, NewAccount{ID: "alice", Currency: "USD"})
	for i := range 50 {
		if _, r, err := srv.c.Transfer(TransferReq{ID: fmt.Sprintf("t%d", i), From: "@world", To: "alice", Amount: 1}); err != nil || r.Status/100 != 2 {
			t.Fatalf("transfer %d: %v %v", i, r, err)
		}
		if !kv {
			continue
		}
		if r, err := srv.c.kvPut(fmt.Sprintf("k%d", i), []byte("v")); err != nil || r.Status != http.StatusCreated {
			t.Fatalf("PUT %d: %v %v", i, r, err)
		}
	}
	srv.kill()
}

// flipInNewestWAL flips a byte a third of the way into the newest WAL of
// the store in dir and returns the WAL's path.
func flipInNewestWAL(t *testing.T, dir string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no WAL in %s: %v", dir, err)
	}
	slices.Sort(logs) // fixed-width numbers: the newest sorts last
	wal := logs[len(logs)-1]
	flipByte(t, wal, 3)
	return wal
}

// flipByte flips one bit of the byte at 1/part of the file at path.
func flipByte(t *testing.T, path string, part int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/part] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("flipped byte %d of %s (%d bytes)", len(b)/part, path, len(b))
}

// TestFlippedTableByteIsReported writes acknowledged key-value entries and
// transfers, stops the server, flips a byte in the middle of each store's
// largest table file and restarts it: without any client reading the
// damaged part, the server must find the damage, log it naming the file,
// and answer /readyz 503 saying so, rather than serve on as if whole until
// a client needs the lost data.
func TestFlippedTableByteIsReported(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir, "--memtable-mb", "1")
	mustCreateAccount(t, srv.c, NewAccount{ID: "alice", Currency: "USD"})
	value := []byte(strings.Repeat("x", 512))
	for i := range 4000 {
		if r, err := srv.c.kvPut(fmt.Sprintf("k%05d", i), value); err != nil || r.Status != http.StatusCreated {
			t.Fatalf("PUT %d: %v %v", i, r, err)
		}
	}
	// Enough transfers for the ledger's 1 MiB memtable to be flushed.
	for b := range 8 {
		batch := BatchReq{}
		for i := range 1000 {
			batch.Transfers = append(batch.Transfers, TransferReq{ID: fmt.Sprintf("t%d-%d", b, i), From: "@world", To: "alice", Amount: 1})
		}
		if _, r, err := srv.c.Batch(batch); err != nil || r.Status != http.StatusOK {
			t.Fatalf("batch %d: %v %v", b, r, err)
		}
	}
	srv.stop()
	for _, store := range []string{dir, filepath.Join(dir, "kv")} {
		t.Run(filepath.Base(store), func(t *testing.T) {
			table := flipInLargestTable(t, store)
			defer flipByte(t, table, 2) // undone for the next store's turn
			srv := startDamaged(t, dir, table, "--memtable-mb", "1")
			out := srv.out.String()
			if !strings.Contains(out, table) {
				t.Fatalf("the damage must be reported naming %s; output:\n%s", table, out)
			}
			if srv.isExited() {
				if srv.err == nil {
					t.Fatalf("exited cleanly over a damaged table; output:\n%s", out)
				}
				t.Logf("refused to start: %s", srv.out.tail(300))
				return
			}
			if !strings.Contains(out, "storage damaged") {
				t.Errorf("the damage must be logged as such; output:\n%s", out)
			}
			name := map[string]string{dir: "ledger", filepath.Join(dir, "kv"): "kv"}[store]
			if v := metric(t, srv, `surge_storage_damaged{store="`+name+`"}`); v != 1 {
				t.Errorf("surge_storage_damaged{store=%q} = %v, want 1 (alerts: SurgeStorageDamaged)", name, v)
			}
			if v := metric(t, srv, "surge_ready"); v != 0 {
				t.Errorf("surge_ready = %v over damaged tables, want 0", v)
			}
			srv.stop()
		})
	}
}

// startDamaged starts surge on dir, whose table file table was damaged,
// and returns once it exited or answers /readyz 503 naming table (its
// check of the table files met the damage; it serves the rest).
func startDamaged(t *testing.T, dir, table string, extraArgs ...string) *server {
	t.Helper()
	srv := launch(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", dir}, extraArgs...), nil)
	select {
	case srv.url = <-srv.listen:
	case <-srv.exited:
	}
	srv.c = newClient(srv.url, "")
	poll(t, startTimeout, "a refusal to start or /readyz 503, naming "+table, func() (bool, string) {
		if srv.isExited() {
			return true, "exited"
		}
		resp, err := srv.c.raw(http.MethodGet, "/readyz", "", nil)
		if err != nil {
			return false, err.Error()
		}
		return resp.Status == http.StatusServiceUnavailable && strings.Contains(resp.String(), table), resp.String()
	})
	return srv
}

// TestRangeCutByCorruptionBreaksTheConnection flips a byte in the middle
// of a key-value table file of a stopped server, then reads the whole
// range: the read error met mid-stream must break the connection (no
// terminating chunk), whether the connection began with the range or with
// an entity request (served through the bridge between the two HTTP
// servers), so that no client takes the cut range for a whole one.
func TestRangeCutByCorruptionBreaksTheConnection(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir, "--memtable-mb", "1")
	value := []byte(strings.Repeat("x", 512))
	for i := range 4000 {
		if r, err := srv.c.kvPut(fmt.Sprintf("k%05d", i), value); err != nil || r.Status != http.StatusCreated {
			t.Fatalf("PUT %d: %v %v", i, r, err)
		}
	}
	srv.stop()
	table := flipInLargestTable(t, filepath.Join(dir, "kv"))
	srv = startDamaged(t, dir, table, "--memtable-mb", "1")
	if srv.isExited() {
		t.Fatalf("a damaged key-value table must not keep surge from starting; output:\n%s", srv.out.String())
	}

	t.Run("range first", func(t *testing.T) {
		conn, host := dialRaw(t, srv.url)
		defer conn.Close()
		fmt.Fprintf(conn, "GET /v0/entities?start=k HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		checkCutRange(t, bufio.NewReader(conn))
	})
	t.Run("after an entity request", func(t *testing.T) {
		conn, host := dialRaw(t, srv.url)
		defer conn.Close()
		br := bufio.NewReader(conn)
		fmt.Fprintf(conn, "GET /v0/entity?id=k00001 HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Fprintf(conn, "GET /v0/entities?start=k HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		checkCutRange(t, br)
	})
}

// checkCutRange reads a range reply: it must start (200) and then break
// off, not end.
func checkCutRange(t *testing.T, br *bufio.Reader) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("range over a corrupt table: status %d (%q); the damage should be met mid-stream", resp.StatusCode, body)
	}
	if err == nil {
		t.Fatalf("a range cut by a storage error ended as if complete (%d bytes, ending %q)", len(body), body[max(0, len(body)-40):])
	}
	t.Logf("range broken off after %d bytes: %v", len(body), err)
}

// flipInLargestTable flips a byte in the middle of the largest table file
// of the store in dir and returns the file's path.
func flipInLargestTable(t *testing.T, dir string) string {
	t.Helper()
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(tables) == 0 {
		t.Fatalf("no table in %s: %v", dir, err)
	}
	var largest string
	var size int64
	for _, p := range tables {
		if st, err := os.Stat(p); err == nil && st.Size() > size {
			largest, size = p, st.Size()
		}
	}
	flipByte(t, largest, 2)
	return largest
}
