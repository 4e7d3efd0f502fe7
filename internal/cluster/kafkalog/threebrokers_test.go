package kafkalog

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/cluster/kafkatest"
)

// threeBrokersEnv turns on TestBrokerDeathLosesNothing (make test-cluster):
// it starts a cluster of its own, three nodes, which takes a minute.
const threeBrokersEnv = "SURGE_KAFKA_CLUSTER_TESTS"

// A broker killed with SIGKILL mid-load, out of three with replication
// factor 3 and min.insync.replicas 2: every append is acknowledged, and
// every command's change counts exactly once in the log. A member whose
// write fails or has an unknown outcome (the partition's leader died)
// takes the partition again and goes on, as a node does.
func TestBrokerDeathLosesNothing(t *testing.T) {
	if os.Getenv(threeBrokersEnv) != "1" {
		t.Skip("starts three brokers; run with " + threeBrokersEnv + "=1 (make test-cluster)")
	}
	if why := kafkatest.Unavailable(); why != "" {
		t.Fatal(why)
	}
	k, err := kafkatest.Start(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := Config{Brokers: k.Brokers, Cluster: "three", Partitions: 3, ReplicationFactor: 3, SessionTimeout: sessionTimeout}
	if err := EnsureTopics(ctx, newClient(t, c), c); err != nil {
		t.Fatal(err)
	}

	const n = 300
	a := joinChain(t, c, "a")
	rounds, stop := context.WithCancel(ctx)
	defer stop()
	failed := make(chan int, 1)
	go func() { failed <- runThrough(rounds, a) }()

	p, err := NewProducer(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range n {
		if i == n/3 {
			if err := k.Kill(2); err != nil {
				t.Fatal(err)
			}
		}
		key := []byte("cmd-" + strconv.Itoa(i))
		if _, err := p.Append(ctx, int32(i)%c.Partitions, key, key); err != nil {
			t.Fatalf("append %d after broker 2's death: %v", i, err)
		}
	}
	a.await(t, ctx, func() bool { return readThrough(a, c, n) }, "read every command")
	stop()
	t.Logf("%d rounds failed or did not count", <-failed)
	restoredOnce(t, ctx, c, n)
}

// runThrough runs a's rounds until ctx ends, whatever becomes of them,
// and returns how many failed or did not count everywhere.
func runThrough(ctx context.Context, a *chainNode) int {
	failed := 0
	for ctx.Err() == nil {
		res, err := a.round(ctx, ctx)
		if err != nil || !res.Counted() {
			failed++
		}
		a.tell(func() {}) // a's position may have moved
	}
	return failed
}

// readThrough reports that a's last writes that counted read every
// partition's commands up to the end of cmd-0 … cmd-(n-1).
func readThrough(a *chainNode, c Config, n int) bool {
	for p := range c.Partitions {
		if at, ok := a.o.Commands(p); !ok || at < commandsEnd(c, n, p) {
			return false
		}
	}
	return true
}
