package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Two-phase transfers and atomic batches across partitions through every
// node of a cluster on a real broker, with a node killed with kill -9
// halfway: every acknowledged batch is all there and every refused one all
// absent, every two-phase transfer ends as its acknowledged post or void
// made it, no hold is left, the balances are what all that makes them, and
// the balances and credits in flight sum to 0 whenever stats are read.
// Its nodes run without peer links (--peer=false): every command for
// another node's partition goes through Kafka, the path links fall back
// on.
func TestClusterTwoPhaseAndAtomicBatchesSurviveANodesKill(t *testing.T) {
	c := startCluster(t, 1, 3, "--peer=false")
	const accounts, fund = 8, 10_000
	for a := range accounts {
		id := fmt.Sprint("acct-", a)
		if r := c.do(a, http.MethodPost, "/v1/accounts", NewAccount{ID: id, Currency: "USD"}, nil); r.Status >= 300 {
			t.Fatalf("creating %s: %s", id, r)
		}
		if r := c.do(a+1, http.MethodPost, "/v1/transfers", TransferReq{ID: "fund-" + id, From: "@world", To: id, Amount: fund}, nil); r.Status >= 300 {
			t.Fatalf("funding %s: %s", id, r)
		}
	}
	stop := make(chan struct{})
	sampled := make(chan int, 1)
	go func() { sampled <- c.sampleStats(t, stop) }()
	l := &ledgerLoad{c: c, t: t, accounts: accounts}
	l.run(4, 24, func() {
		c.alive[2].Store(false)
		c.nodes[2].kill()
	})
	close(stop)
	t.Logf("stats read %d times under load, each summing to 0", <-sampled)
	want := map[string]int64{}
	for a := range accounts {
		want[fmt.Sprint("acct-", a)] = fund
	}
	l.checkBatches(want)
	l.checkTwoPhase(want)
	c.checkBalances(t, want)
	t.Logf("%d atomic batches applied, %d refused; %d two-phase transfers", len(l.applied), len(l.refused), len(l.twoPhase))
}

// ledgerLoad is the load of two-phase transfers and atomic batches and
// what the cluster acknowledged of it.
type ledgerLoad struct {
	c        *clusterNodes
	t        *testing.T
	accounts int

	mu       sync.Mutex
	applied  [][]TransferReq // atomic batches answered 200
	refused  [][]TransferReq // atomic batches answered 422
	twoPhase []twoPhaseOp
}

// twoPhaseOp is a two-phase transfer and what its acknowledged post (amount,
// 0: all) or void made of it.
type twoPhaseOp struct {
	req    TransferReq
	voided bool
	amount int64
}

// run has workers on every node make, in turn, an atomic batch of three
// items (one in four with an item too large to be paid, so refused) and a
// two-phase transfer settled at once, and calls kill halfway.
func (l *ledgerLoad) run(workers, each int, kill func()) {
	halfwayKill(workers, each, 11, func() {
		kill()
		l.t.Logf("node killed after %d operations", workers*each/2)
	}, func(w, n int, rng *rand.Rand) {
		if n%2 == 0 {
			l.batch(w, rng, fmt.Sprintf("b%d-%d", w, n))
		} else {
			l.pendingThenSettle(w, rng, fmt.Sprintf("p%d-%d", w, n))
		}
	})
}

func (l *ledgerLoad) pair(rng *rand.Rand) (string, string) {
	from, to := rng.IntN(l.accounts), rng.IntN(l.accounts-1)
	if to >= from {
		to++
	}
	return fmt.Sprint("acct-", from), fmt.Sprint("acct-", to)
}

// batch sends an atomic batch until it has a definite answer: a retry
// that meets the first attempt still being decided hears
// idempotency_conflict, and asks again.
func (l *ledgerLoad) batch(w int, rng *rand.Rand, id string) {
	items := make([]TransferReq, 3)
	for k := range items {
		from, to := l.pair(rng)
		items[k] = TransferReq{ID: fmt.Sprintf("%s-%d", id, k), From: from, To: to, Amount: int64(1 + rng.IntN(50))}
	}
	if rng.IntN(4) == 0 {
		items[rng.IntN(3)].Amount = 1_000_000
	}
	for try := 0; ; try++ {
		var out BatchReply
		r := l.c.do(w, http.MethodPost, "/v1/transfers/batch", BatchReq{Atomic: true, Transfers: items}, nil)
		if err := json.Unmarshal(r.Body, &out); err != nil {
			l.t.Errorf("batch %s: %s: %v", id, r, err)
			return
		}
		switch {
		case r.Status == http.StatusOK:
			l.mu.Lock()
			l.applied = append(l.applied, items)
			l.mu.Unlock()
			return
		case r.Status == http.StatusUnprocessableEntity && !deciding(out):
			l.mu.Lock()
			l.refused = append(l.refused, items)
			l.mu.Unlock()
			return
		case try == 100:
			l.t.Errorf("batch %s: %s %+v", id, r, out)
			return
		}
		time.Sleep(100 * time.Millisecond) // the first attempt is being decided
	}
}

// deciding reports whether a refused batch met a first attempt of its own
// still being decided.
func deciding(out BatchReply) bool {
	for _, it := range out.Results {
		if it.Code == "idempotency_conflict" {
			return true
		}
	}
	return false
}

// pendingThenSettle holds an amount, then posts part or all of it or voids
// it, on any node. A settle retried after its first attempt took effect
// hears transfer_not_pending: the transfer then shows what that attempt
// did.
func (l *ledgerLoad) pendingThenSettle(w int, rng *rand.Rand, id string) {
	from, to := l.pair(rng)
	req := TransferReq{ID: id, From: from, To: to, Amount: int64(1 + rng.IntN(80)), Pending: true}
	if r := l.c.do(w, http.MethodPost, "/v1/transfers", req, nil); r.Status != http.StatusCreated && r.Status != http.StatusOK {
		l.t.Errorf("pending %s: %s", id, r)
		return
	}
	s := twoPhaseOp{req: req, voided: rng.IntN(3) == 0}
	path, body := "/v1/transfers/"+id+"/post", any(nil)
	if s.voided {
		path = "/v1/transfers/" + id + "/void"
	} else if s.amount = rng.Int64N(req.Amount + 1); s.amount > 0 {
		body = map[string]int64{"amount": s.amount}
	}
	if r := l.c.do(w+1, http.MethodPost, path, body, nil); r.Status != http.StatusOK && r.Status != http.StatusConflict {
		l.t.Errorf("settling %s: %s", id, r)
		return
	}
	l.mu.Lock()
	l.twoPhase = append(l.twoPhase, s)
	l.mu.Unlock()
}

// checkBatches proves every item of every applied batch is there and no
// item of a refused one is, and adds the applied ones to want.
func (l *ledgerLoad) checkBatches(want map[string]int64) {
	i := 0
	for _, b := range l.applied {
		for _, it := range b {
			var got Transfer
			if r := l.c.do(i, http.MethodGet, "/v1/transfers/"+it.ID, nil, &got); r.Status != http.StatusOK || got.Amount != it.Amount || got.From != it.From || got.To != it.To || got.State != "posted" {
				l.t.Errorf("item %s of an applied batch: %s, %+v", it.ID, r, got)
			}
			want[it.From] -= it.Amount
			want[it.To] += it.Amount
			i++
		}
	}
	for _, b := range l.refused {
		for _, it := range b {
			if r := l.c.do(i, http.MethodGet, "/v1/transfers/"+it.ID, nil, nil); r.Status != http.StatusNotFound {
				l.t.Errorf("item %s of a refused batch: %s", it.ID, r)
			}
			i++
		}
	}
}

// checkTwoPhase proves every two-phase transfer ended as its settle made
// it, and adds what moved to want.
func (l *ledgerLoad) checkTwoPhase(want map[string]int64) {
	for i, s := range l.twoPhase {
		var got Transfer
		r := l.c.do(i, http.MethodGet, "/v1/transfers/"+s.req.ID, nil, &got)
		moved := s.amount
		if moved == 0 {
			moved = s.req.Amount
		}
		state := "posted"
		if s.voided {
			moved, state = 0, "voided"
		}
		if r.Status != http.StatusOK || got.State != state || got.PostedAmount != moved || got.Amount != s.req.Amount {
			l.t.Errorf("two-phase %s: %s, %+v; want %s with %d", s.req.ID, r, got, state, moved)
		}
		want[s.req.From] -= moved
		want[s.req.To] += moved
	}
}

// checkBalances waits for every credit to be applied, failing if the
// balances and the credits in flight ever sum to anything but 0, then
// proves each account's balance is want's and holds nothing. Credits in
// flight that stay below 0 are a credit applied more often than it was
// forwarded.
func (c *clusterNodes) checkBalances(t *testing.T, want map[string]int64) {
	poll(t, startTimeout, "every credit to be applied", func() (bool, string) {
		var st ledgerStats
		if r := c.do(0, http.MethodGet, "/v1/ledger/stats", nil, &st); r.Status != http.StatusOK {
			t.Fatalf("ledger stats: %s", r)
		}
		sum, inFlight := st.BalanceSum["USD"], st.InFlight["USD"]
		if sum+inFlight != 0 {
			t.Fatalf("balances %d + credits in flight %d != 0", sum, inFlight)
		}
		return inFlight == 0, fmt.Sprintf("balances sum to %d, credits in flight %d", sum, inFlight)
	})
	for id, bal := range want {
		var a Account
		if r := c.do(1, http.MethodGet, "/v1/accounts/"+id, nil, &a); r.Status != http.StatusOK || a.Balance != bal || a.Pending != 0 {
			t.Errorf("%s: balance %d pending %d (%s); the acknowledged operations make it %d and 0", id, a.Balance, a.Pending, r, bal)
		}
	}
}

// ledgerStats is the body of GET /v1/ledger/stats in a cluster.
type ledgerStats struct {
	BalanceSum map[string]int64 `json:"balance_sum"`
	InFlight   map[string]int64 `json:"credits_in_flight"`
}

// sampleStats reads stats from the live nodes in turn until stop, failing
// if balances and credits in flight ever sum to anything but 0; it
// returns how many reads it made.
func (c *clusterNodes) sampleStats(t *testing.T, stop <-chan struct{}) int {
	n := 0
	for i := 0; ; i++ {
		select {
		case <-stop:
			return n
		default:
		}
		var st ledgerStats
		s := c.nodes[i%len(c.nodes)]
		if !c.alive[i%len(c.nodes)].Load() {
			continue
		}
		if r, err := s.c.do(http.MethodGet, "/v1/ledger/stats", nil, &st); err != nil || r.Status != http.StatusOK {
			continue // the node was killed, or a partition was moving
		}
		if sum := st.BalanceSum["USD"] + st.InFlight["USD"]; sum != 0 {
			t.Errorf("stats: balances %d + credits in flight %d = %d", st.BalanceSum["USD"], st.InFlight["USD"], sum)
		}
		n++
		time.Sleep(50 * time.Millisecond) // a read every 50 ms is enough to sample
	}
}

// An atomic batch of the single node's largest size, 8,190 items across
// partitions, is applied whole on a cluster: its command, carrying every
// item from partition to partition, and its reply are records of several
// MiB, over Kafka's default limit of 1 MiB.
func TestClusterAtomicBatchOfTheSingleNodesSize(t *testing.T) {
	c := startCluster(t, 1, 2)
	const accounts, items = 8, 8190
	want := map[string]int64{}
	for a := range accounts {
		id := fmt.Sprint("big-", a)
		if r := c.do(a, http.MethodPost, "/v1/accounts", NewAccount{ID: id, Currency: "USD"}, nil); r.Status >= 300 {
			t.Fatalf("creating %s: %s", id, r)
		}
		if r := c.do(a, http.MethodPost, "/v1/transfers", TransferReq{ID: "fund-" + id, From: "@world", To: id, Amount: items}, nil); r.Status >= 300 {
			t.Fatalf("funding %s: %s", id, r)
		}
		want[id] = items
	}
	batch := make([]TransferReq, items)
	for i := range batch {
		from, to := fmt.Sprint("big-", i%accounts), fmt.Sprint("big-", (i+1)%accounts)
		batch[i] = TransferReq{ID: fmt.Sprint("big-item-", i), From: from, To: to, Amount: int64(1 + i%accounts)}
		want[from] -= batch[i].Amount
		want[to] += batch[i].Amount
	}
	var out BatchReply
	if r := c.do(1, http.MethodPost, "/v1/transfers/batch", BatchReq{Atomic: true, Transfers: batch}, &out); r.Status != http.StatusOK || len(out.Results) != items {
		t.Fatalf("atomic batch of %d items: %d results, %s", items, len(out.Results), r)
	}
	c.checkBalances(t, want)
}
