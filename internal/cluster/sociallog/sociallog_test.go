package sociallog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/cluster/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// node is a Log and what its apply saw, in order.
type node struct {
	log *Log
	mu  sync.Mutex
	saw []string
}

func (n *node) apply(offset int64, record []byte) (any, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.saw = append(n.saw, fmt.Sprintf("%d:%s", offset, record))
	return string(record), nil
}

func (n *node) seen() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.saw)
}

func newConfig(t *testing.T) (context.Context, kafkalog.Config) {
	t.Helper()
	k := kafkatest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	name := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()) + "-" + uuid.NewString()[:8]
	return ctx, kafkalog.Config{Brokers: k.Brokers, Cluster: name, Partitions: 1}
}

// startNode opens the log and applies it from offset from.
func startNode(t *testing.T, ctx context.Context, c kafkalog.Config, from int64) *node {
	t.Helper()
	l, err := Open(ctx, c, Snapshots{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	n := &node{log: l}
	if err := l.Run(ctx, c, from, n.apply); err != nil {
		t.Fatal(err)
	}
	return n
}

// Every node applies every record in the same order; a proposal returns
// its own record's outcome; a node that syncs has applied every record
// proposed before, on any node; a node started from an offset applies
// the records from it on, all those appended before it started once Run
// returns.
func TestNodesApplyOneOrder(t *testing.T) {
	ctx, c := newConfig(t)
	a, b := startNode(t, ctx, c, 0), startNode(t, ctx, c, 0)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			n := []*node{a, b}[i%2]
			rec := fmt.Sprintf("r%d", i)
			out, err := n.log.Propose(ctx, []byte(rec))
			if err != nil || out != rec {
				t.Errorf("propose %s: %v %v", rec, out, err)
			}
		})
	}
	wg.Wait()
	if _, err := a.log.Propose(ctx, []byte("last")); err != nil {
		t.Fatal(err)
	}
	if err := b.log.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	sa, sb := a.seen(), b.seen()
	if len(sb) != 41 || sb[40] != "40:last" || !slices.Equal(sa, sb) {
		t.Fatalf("after b's sync: a saw %v, b saw %v", sa, sb)
	}
	late := startNode(t, ctx, c, 30)
	if got := late.seen(); !slices.Equal(got, sa[30:]) {
		t.Fatalf("a node from offset 30 saw %v, want %v", got, sa[30:])
	}
}

// A store whose applied offset is past the log's end is refused.
func TestRunRefusesAnOffsetPastTheEnd(t *testing.T) {
	ctx, c := newConfig(t)
	a := startNode(t, ctx, c, 0)
	if _, err := a.log.Propose(ctx, []byte("one")); err != nil {
		t.Fatal(err)
	}
	l, err := Open(ctx, c, Snapshots{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Run(ctx, c, 5, (&node{}).apply); err == nil {
		t.Fatal("Run from offset 5 of a log of 1 record succeeded")
	}
}

// An apply that fails stops the log: the proposal waiting on it, and
// every later one, fails.
func TestFailedApplyStopsTheLog(t *testing.T) {
	ctx, c := newConfig(t)
	l, err := Open(ctx, c, Snapshots{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fail := func(int64, []byte) (any, error) { return nil, fmt.Errorf("disk gone") }
	if err := l.Run(ctx, c, 0, fail); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Propose(ctx, []byte("x")); err == nil {
		t.Fatal("a proposal whose apply failed succeeded")
	}
	if _, err := l.Propose(ctx, []byte("y")); err == nil {
		t.Fatal("a proposal after the log stopped succeeded")
	}
	if err := l.Sync(ctx); err == nil {
		t.Fatal("a sync after the log stopped succeeded")
	}
}
