package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/cluster/kafkatest"
)

// clusterNodes is the cluster of a test: surge processes on one Kafka.
type clusterNodes struct {
	t     *testing.T
	kafka *kafkatest.Cluster
	args  []string
	dirs  []string
	nodes []*server
	alive []atomic.Bool
}

// startCluster starts Kafka with brokers brokers and n surge nodes on it,
// each given the flags extra too. It runs under
// SURGE_KAFKA_CLUSTER_TESTS=1 (make test-cluster), since it takes minutes.
func startCluster(t *testing.T, brokers, n int, extra ...string) *clusterNodes {
	if os.Getenv("SURGE_KAFKA_CLUSTER_TESTS") == "" {
		t.Skip("cluster tests run with SURGE_KAFKA_CLUSTER_TESTS=1 (make test-cluster)")
	}
	if why := kafkatest.Unavailable(); why != "" {
		t.Fatal(why)
	}
	k, err := kafkatest.Start(brokers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Stop() })
	return startNodes(t, k, n, extra...)
}

// startNodes starts n surge nodes on Kafka k, each given the flags extra
// too.
func startNodes(t *testing.T, k *kafkatest.Cluster, n int, extra ...string) *clusterNodes {
	c := &clusterNodes{t: t, kafka: k, alive: make([]atomic.Bool, n),
		args: []string{"--kafka", strings.Join(k.Brokers, ","), "--partitions", "6", "--session-timeout", "3s"}}
	c.args = append(c.args, extra...)
	for i := range n {
		c.dirs = append(c.dirs, t.TempDir())
		c.nodes = append(c.nodes, start(t, c.dirs[i], c.args...))
		c.alive[i].Store(true)
	}
	for _, s := range c.nodes { // joins moved partitions: each serves again
		s.pollReady(s.name + " ready with its partitions")
	}
	return c
}

// onLive calls try with node i, then the next live nodes, until it
// returns true; false if no node did in 200 attempts.
func (c *clusterNodes) onLive(i int, try func(s *server) bool) bool {
	for n := 0; n < 200; n++ {
		j := (i + n) % len(c.nodes)
		if !c.alive[j].Load() {
			continue
		}
		if try(c.nodes[j]) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// do sends a request to node i, then to the next live nodes, until one
// gives an answer that is not a failure to reach the owner (5xx or a
// broken connection): the same request, so the same idempotency key.
func (c *clusterNodes) do(i int, method, path string, in, out any) *Response {
	var r *Response
	ok := c.onLive(i, func(s *server) bool {
		var err error
		r, err = s.c.do(method, path, in, out)
		return err == nil && r.Status < 500
	})
	if !ok {
		c.t.Fatalf("%s %s: no node answered", method, path)
	}
	return r
}

// A node's kill -9 under load loses no acknowledged transfer, key-value
// write or reservation: every transfer is there with its amount on the
// others, balances are what the acknowledged transfers make them, the sum
// is 0, every acknowledged PUT reads back, no seat is held by two
// reservations, and the node rejoins. The requests a node gets for
// another's partitions go over peer links (the default), which refuse
// strangers.
func TestClusterSurvivesANodesKill(t *testing.T) {
	c := startCluster(t, 1, 3)
	refusesStrangers(t, c.nodes[0])
	c.survivesANodesKill(t)
	if n := peerReplies(t, c.nodes[0], c.nodes[1]); n == 0 {
		t.Fatal("no reply came back over a peer link")
	} else {
		t.Logf("replies over peer links to nodes 1 and 2: %.0f", n)
	}
}

// survivesANodesKill stops node 3 halfway through loseNothing's load and
// starts it again: a clean stop writes its local copy to disk whole, so
// the copy holds the state of that moment. Once the node serves again,
// the load still running, it is killed with kill -9, which loses what its
// copy took since (the copy keeps no WAL), and restarted: its takes
// restore its partitions from the copy and the changelog's tail. Every
// acknowledged write then reads back through every node, the restarted
// one included, whose balances are what the changelog makes them.
func (c *clusterNodes) survivesANodesKill(t *testing.T) {
	check := c.loseNothing(t, func() {
		c.alive[2].Store(false)
		c.nodes[2].stop()
		c.nodes[2] = start(t, c.dirs[2], c.args...)
	}, func() { c.nodes[2].kill() }) // the node prepare started
	c.nodes[2] = start(t, c.dirs[2], c.args...)
	c.alive[2].Store(true)
	if _, r, err := c.nodes[2].c.Stats(); err != nil || r.Status != http.StatusOK {
		t.Fatalf("the restarted node does not serve the ledger: %v %v", r, err)
	}
	for _, s := range c.nodes { // node 3 took partitions back
		s.pollReady(s.name + " ready with its partitions")
	}
	logRestores(t, c.nodes[2], 0)
	check()
}

// A broker's kill -9 under load, with 3 brokers (replication factor 3,
// min.insync.replicas 2), loses nothing either (make test-cluster-long,
// which CI runs: about 3 minutes here).
func TestClusterSurvivesABrokersKill(t *testing.T) {
	c := startCluster(t, 3, 3)
	c.loseNothing(t, nil, func() {
		if err := c.kafka.Kill(2); err != nil {
			t.Fatal(err)
		}
	})
}

// loseNothing opens and funds accounts, runs transfers and key-value
// writes through every node, calls prepare, if set, then kill halfway,
// then checks every acknowledged write. It returns a check of the
// acknowledged transfers and key-value writes to run again later.
func (c *clusterNodes) loseNothing(t *testing.T, prepare, kill func()) (check func()) {
	const accounts, fund = 12, 1_000_000
	for a := range accounts {
		id := fmt.Sprint("acct-", a)
		if r := c.do(a, http.MethodPost, "/v1/accounts", NewAccount{ID: id, Currency: "USD"}, nil); r.Status >= 300 {
			t.Fatalf("creating %s: %s", id, r)
		}
		tr := TransferReq{ID: "fund-" + id, From: "@world", To: id, Amount: fund}
		if r := c.do(a+1, http.MethodPost, "/v1/transfers", tr, nil); r.Status >= 300 {
			t.Fatalf("funding %s: %s", id, r)
		}
	}
	mustCreateEvent(t, c.nodes[0].c, Event{EventName: "gig", Artist: "band", Areas: []EventArea{
		{AreaID: "A", Price: 50, RowCount: 6, ColCount: 10}, {AreaID: "B", Price: 80, RowCount: 6, ColCount: 10},
	}})
	kvDone, seatsDone := make(chan map[string]string, 1), make(chan []string, 1)
	go func() { kvDone <- c.putEntries(t, 3, 60) }()
	go func() { seatsDone <- c.reserveSeats(t, 3, 40) }()
	acked := c.load(t, accounts, 6, 60, prepare, kill)
	entries, reservations := <-kvDone, <-seatsDone
	check = func() {
		c.checkTransfers(t, acked, accounts, fund)
		c.checkEntries(t, entries)
	}
	check()
	c.checkSeats(t, reservations, 120)
	return check
}

// load runs workers on every node, each making transfers between random
// accounts, and calls prepare, if set, then kill halfway; it returns the
// acknowledged transfers and logs how long after the kill every partition
// served again.
func (c *clusterNodes) load(t *testing.T, accounts, workers, each int, prepare, kill func()) map[string]TransferReq {
	var mu sync.Mutex
	acked := map[string]TransferReq{}
	halfwayKill(workers, each, 7, func() {
		if prepare != nil {
			prepare()
		}
		marks := make([]int, len(c.nodes))
		for i, s := range c.nodes {
			marks[i] = len(s.out.String())
		}
		killed := time.Now()
		kill()
		if _, r, err := c.nodes[0].c.Stats(); err != nil || r.Status != http.StatusOK {
			t.Errorf("stats after the kill: %v %v", r, err)
		}
		t.Logf("killed at %s: every partition served again after %v", killed.UTC().Format("15:04:05.000"), time.Since(killed).Round(time.Millisecond))
		c.logRestores(t, marks)
	}, func(w, n int, rng *rand.Rand) {
		from, to := rng.IntN(accounts), rng.IntN(accounts-1)
		if to >= from {
			to++
		}
		tr := TransferReq{ID: fmt.Sprintf("w%d-%d", w, n), From: fmt.Sprint("acct-", from), To: fmt.Sprint("acct-", to), Amount: int64(1 + rng.IntN(100))}
		if r := c.do(w, http.MethodPost, "/v1/transfers", tr, nil); r.Status != http.StatusCreated && r.Status != http.StatusOK {
			t.Errorf("transfer %s: %s", tr.ID, r)
			return
		}
		mu.Lock()
		acked[tr.ID] = tr
		mu.Unlock()
	})
	return acked
}

// halfwayKill runs op each times on each of workers workers, each with its
// own random source (seeded with seed), calls kill once half the
// operations are done, and returns when all are.
func halfwayKill(workers, each int, seed uint64, kill func(), op func(w, n int, rng *rand.Rand)) {
	var done atomic.Int64
	half := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), seed))
			for n := range each {
				op(w, n, rng)
				if done.Add(1) == int64(workers*each/2) {
					close(half)
				}
			}
		})
	}
	<-half
	kill()
	wg.Wait()
}

// logRestores logs what the live nodes said of their partitions since
// their output's length was marks: when each rebuild ended, how long it
// took and how many changelog records it read.
func (c *clusterNodes) logRestores(t *testing.T, marks []int) {
	for i, s := range c.nodes {
		if c.alive[i].Load() {
			logRestores(t, s, marks[i])
		}
	}
}

// logRestores logs what s said of its partitions after the first mark
// bytes of its output.
func logRestores(t *testing.T, s *server, mark int) {
	for line := range strings.Lines(s.out.String()[mark:]) {
		if strings.Contains(line, "cluster: restoring a partition") || strings.Contains(line, "round not committed") || strings.Contains(line, "whole changelog") {
			t.Logf("%s: %s", s.name, strings.TrimSpace(line))
		}
	}
}

// checkTransfers proves every acknowledged transfer is there, the balances
// are what they make them, and the sum is 0.
func (c *clusterNodes) checkTransfers(t *testing.T, acked map[string]TransferReq, accounts int, fund int64) {
	want := map[string]int64{}
	for a := range accounts {
		want[fmt.Sprint("acct-", a)] = fund
	}
	i := 0
	for id, tr := range acked {
		var got Transfer
		if r := c.do(i, http.MethodGet, "/v1/transfers/"+id, nil, &got); r.Status != http.StatusOK || got.Amount != tr.Amount || got.From != tr.From || got.To != tr.To {
			t.Errorf("acknowledged transfer %s: %s, got %+v want %+v", id, r, got, tr)
		}
		want[tr.From] -= tr.Amount
		want[tr.To] += tr.Amount
		i++
	}
	c.checkBalances(t, want)
	t.Logf("%d acknowledged transfers checked", len(acked))
}

// putEntries has workers PUT entries through every node while the load
// runs, retrying on the other nodes as do does; it returns the
// acknowledged entries.
func (c *clusterNodes) putEntries(t *testing.T, workers, each int) map[string]string {
	var mu sync.Mutex
	acked := map[string]string{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for n := range each {
				key, value := fmt.Sprintf("kv-%d-%d", w, n), fmt.Sprintf("value %d of worker %d", n, w)
				if c.putEntry(w, key, value) {
					mu.Lock()
					acked[key] = value
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return acked
}

// putEntry PUTs key on node i or the next live ones until one
// acknowledges it.
func (c *clusterNodes) putEntry(i int, key, value string) bool {
	ok := c.onLive(i, func(s *server) bool {
		r, err := s.c.raw(http.MethodPut, "/v0/entity?id="+key, "application/octet-stream", []byte(value))
		return err == nil && r.Status == http.StatusCreated
	})
	if !ok {
		c.t.Errorf("PUT %s: no node acknowledged it", key)
	}
	return ok
}

// checkEntries reads every acknowledged entry back, each from a live
// node, in turn.
func (c *clusterNodes) checkEntries(t *testing.T, acked map[string]string) {
	var live []*server
	for j, s := range c.nodes {
		if c.alive[j].Load() {
			live = append(live, s)
		}
	}
	i := 0
	for key, value := range acked {
		r, err := live[i%len(live)].c.raw(http.MethodGet, "/v0/entity?id="+key, "", nil)
		if err != nil || r.Status != http.StatusOK || string(r.Body) != value {
			t.Errorf("acknowledged entry %s: %v %v, want %q", key, r, err, value)
		}
		i++
	}
	t.Logf("%d acknowledged key-value writes checked", len(acked))
}

// reserveSeats has workers reserve 1 to 4 seats in area A or B of event
// gig through every node while the load runs, retrying on the other nodes;
// it returns the ids of the acknowledged reservations.
func (c *clusterNodes) reserveSeats(t *testing.T, workers, each int) []string {
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for n := range each {
				req := ReserveReq{UserID: fmt.Sprint("u", w), EventID: "gig", AreaID: []string{"A", "B"}[n%2], NumOfSeats: 1 + n%4, Type: "RANDOM"}
				c.onLive(w+n, func(s *server) bool {
					id, r, err := reserve(s.c, req)
					if err != nil || r.Status >= 500 {
						return false // not acknowledged: tried again
					}
					if r.Status == http.StatusOK {
						mu.Lock()
						ids = append(ids, id)
						mu.Unlock()
					}
					return true
				})
			}
		})
	}
	wg.Wait()
	return ids
}

// checkSeats reads every acknowledged reservation back from a survivor:
// each is decided, and no seat is held by two of them; the event's
// availability counts at least their seats as sold (a reservation filed
// but not acknowledged before a kill may hold seats too).
func (c *clusterNodes) checkSeats(t *testing.T, ids []string, seats int) {
	held := map[string]string{}
	reserved := 0
	for i, id := range ids {
		var res Reservation
		r := c.do(i%2, http.MethodGet, "/v1/reservation/"+id, nil, &res)
		if r.Status != http.StatusOK || (res.State != "RESERVED" && res.State != "FAILED") {
			t.Errorf("acknowledged reservation %s: %s", id, r)
			continue
		}
		for _, s := range res.Seats {
			seat := fmt.Sprintf("%s %d/%d", res.AreaID, s.Row, s.Col)
			if other, taken := held[seat]; taken && res.State == "RESERVED" {
				t.Errorf("seat %s held by %s and %s", seat, other, id)
			}
			if res.State == "RESERVED" {
				held[seat] = id
			}
		}
		if res.State == "RESERVED" {
			reserved += len(res.Seats)
		}
	}
	var ev Event
	if r := c.do(0, http.MethodGet, "/v1/event/gig", nil, &ev); r.Status != http.StatusOK {
		t.Fatalf("event: %s", r)
	}
	available := 0
	for _, a := range ev.Areas {
		available += *a.Available
	}
	if seats-available < reserved {
		t.Errorf("event shows %d seats sold, the acknowledged reservations hold %d", seats-available, reserved)
	}
	t.Logf("%d acknowledged reservations checked: %d seats held, %d of %d available", len(ids), reserved, available, seats)
}
