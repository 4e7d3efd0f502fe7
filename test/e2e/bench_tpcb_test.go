package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// tpcbResult is what this test reads of bench tpcb's --out file.
type tpcbResult struct {
	TPCB struct {
		Turns []struct {
			Target       string `json:"target"`
			Transactions int64  `json:"transactions"`
			Failed       int64  `json:"failed"`
		} `json:"turns"`
		Ratio *struct {
			N int `json:"n"`
		} `json:"ratio"`
		Consistent map[string]string `json:"consistent"`
	} `json:"tpcb"`
}

// bench tpcb against the real binary and a real PostgreSQL: the targets
// take turns, every transaction of each commits, and afterwards each
// side's books balance as TPC-B requires: on surge the accounts, tellers
// and branches moved by the same deltas (the atomic batch applied whole),
// on PostgreSQL pgbench's four tables agree and the history has a row per
// transaction.
func TestBenchTPCBAgainstServerAndPostgres(t *testing.T) {
	pg := startPostgres(t)
	srv := start(t, t.TempDir(), "--shards", "2")
	const accounts, perTurn, rounds = 50, 120, 2
	out := filepath.Join(t.TempDir(), "tpcb.json")
	cmd := exec.Command(binPath, "bench", "tpcb", "--target", srv.url, "--pg", pg, "--accounts", fmt.Sprint(accounts),
		"--vus", "4", "--iterations", fmt.Sprint(perTurn), "--rounds", fmt.Sprint(rounds), "--seed", "7", "--out", out)
	cmd.Env = childEnv()
	text, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench tpcb: %v\n%s", err, text)
	}
	for _, want := range []string{"postgresql_tps", "ratio_surge_to_postgresql", "consistency_postgresql"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("summary lacks %s:\n%s", want, text)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res tpcbResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	turns := res.TPCB.Turns
	if len(turns) != 2*rounds {
		t.Fatalf("%d turns, want %d", len(turns), 2*rounds)
	}
	for i, turn := range turns {
		if want := []string{"surge", "postgresql"}[i%2]; turn.Target != want || turn.Transactions != perTurn || turn.Failed != 0 {
			t.Errorf("turn %d: %+v, want %s with %d transactions, none failed", i+1, turn, want, perTurn)
		}
	}
	if res.TPCB.Ratio == nil || res.TPCB.Ratio.N != rounds {
		t.Errorf("ratio %+v, want one per pair of turns", res.TPCB.Ratio)
	}
	for _, target := range []string{"surge", "postgresql"} {
		if c := res.TPCB.Consistent[target]; !strings.HasPrefix(c, "ok") {
			t.Errorf("%s consistency: %q", target, c)
		}
	}
	checkTPCBLedger(t, srv, accounts)
	checkTPCBTables(t, pg, rounds*perTurn)
}

// checkTPCBLedger reads every tpcb account back: their balances sum to
// the branch's, as each transaction moved both by its delta.
func checkTPCBLedger(t *testing.T, srv *server, accounts int) {
	t.Helper()
	balance := func(id string) int64 {
		a, r, err := srv.c.Account(id)
		if !wantStatus(t, r, err, 200) {
			t.Fatalf("account %s", id)
		}
		return a.Balance
	}
	var sum int64
	for i := 1; i <= accounts; i++ {
		sum += balance(fmt.Sprintf("tpcb-a%d", i))
	}
	if branch := balance("tpcb-b1"); sum != branch || sum == 0 {
		t.Errorf("accounts sum to %d, the branch holds %d", sum, branch)
	}
}

// checkTPCBTables checks pgbench's tables after n transactions.
func checkTPCBTables(t *testing.T, url string, n int) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var rows, a, b int64
	if err := c.QueryRow(ctx, `SELECT count(*), sum(delta), (SELECT sum(abalance) FROM pgbench_accounts) FROM pgbench_history`).Scan(&rows, &a, &b); err != nil {
		t.Fatal(err)
	}
	if rows != int64(n) || a != b {
		t.Errorf("history: %d rows summing to %d, accounts sum to %d; want %d rows and equal sums", rows, a, b, n)
	}
}
