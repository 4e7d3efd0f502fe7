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
// every command is done exactly once. A member whose round fails (its
// coordinator died with the broker) joins again under the same node id, as
// a node would.
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
	rounds, stop := context.WithCancel(ctx)
	set := &committedSet{done: map[string]int{}, n: n, cancel: stop}
	rejoins := make(chan int, 1)
	go func() { rejoins <- runNode(t, rounds, c, "n1", set) }()

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
	<-rounds.Done()
	t.Logf("the member joined again %d times", <-rejoins)
	if ctx.Err() != nil {
		t.Fatalf("rounds committed %d of %d commands before the deadline", len(set.done), n)
	}
	exactlyOnce(t, "committed replies", readAll(t, ctx, c, c.RepliesTopic(), true), n)
}

// runNode runs node's rounds until ctx ends; when a round fails it closes
// the member and joins again, which fences the failed one. It returns how
// many times it joined again.
func runNode(t *testing.T, ctx context.Context, c Config, node string, set *committedSet) int {
	for rejoins := 0; ; rejoins++ {
		m, err := Join(ctx, c, node, Handlers{})
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("joining: %v", err)
			}
			return rejoins
		}
		err = runRounds(ctx, m, echo(c, node, node), set)
		m.Close()
		if err == nil {
			return rejoins
		}
		t.Logf("round failed, joining again: %v", err)
	}
}
