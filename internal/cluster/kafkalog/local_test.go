package kafkalog

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// testLocal is a Local holding commands a test gives it.
type testLocal struct {
	mu   sync.Mutex
	cmds []Command
	wake chan struct{}
}

func newTestLocal(cmds ...Command) *testLocal {
	l := &testLocal{wake: make(chan struct{}, 1)}
	l.add(cmds...)
	return l
}

func (l *testLocal) add(cmds ...Command) {
	l.mu.Lock()
	l.cmds = append(l.cmds, cmds...)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *testLocal) Waiting() <-chan struct{} { return l.wake }

func (l *testLocal) Take(max int) []Command {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := min(max, len(l.cmds))
	taken := l.cmds[:n]
	l.cmds = l.cmds[n:]
	return taken
}

// localCommand is a command a node takes itself for partition p.
func localCommand(p int32, key string) Command {
	return Command{Partition: p, Offset: -1, Key: []byte(key), Value: []byte(key)}
}

// fakeCluster is a kfake cluster with c's topics.
func fakeCluster(t *testing.T, partitions int32) (*kfake.Cluster, context.Context, Config) {
	t.Helper()
	return fakeBrokers(t, 1, partitions)
}

// fakeBrokers is fakeCluster on the given number of fake brokers.
func fakeBrokers(t *testing.T, brokers int, partitions int32) (*kfake.Cluster, context.Context, Config) {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	c := Config{Brokers: kc.ListenAddrs(), Cluster: "local", Partitions: partitions, SessionTimeout: 6 * time.Second}
	if err := EnsureTopics(ctx, newClient(t, c), c); err != nil {
		t.Fatal(err)
	}
	return kc, ctx, c
}

// takenMember is a member of a one-partition cluster that took the
// partition, with cmd-0 appended for it to poll.
func takenMember(t *testing.T) (context.Context, *chainNode) {
	t.Helper()
	_, ctx, c := fakeCluster(t, 1)
	a := joinChain(t, c, "a")
	a.await(t, ctx, func() bool { return a.taken[0] == 1 }, "took 0")
	appendCommands(t, ctx, c, 0, 1)
	return ctx, a
}

// A round takes the local commands beside those it polls, the local ones
// first, and a local command wakes a round waiting for commands.
func TestRoundTakesLocalAndPolledCommands(t *testing.T) {
	ctx, a := takenMember(t)
	var got []string
	local := newTestLocal(localCommand(0, "local-0"))
	for len(got) < 2 {
		for _, cmd := range countedRound(t, ctx, a, 10, local, a.apply) {
			got = append(got, string(cmd.Key))
		}
	}
	if !slices.Equal(got, []string{"local-0", "cmd-0"}) {
		t.Fatalf("rounds applied %v, want local-0 then cmd-0", got)
	}
	// A round waiting with nothing to poll is woken by a local command.
	woken := newTestLocal()
	go woken.add(localCommand(0, "local-1"))
	got = nil
	for len(got) == 0 {
		for _, cmd := range countedRound(t, ctx, a, 10, woken, a.apply) {
			got = append(got, string(cmd.Key))
		}
	}
	if !slices.Equal(got, []string{"local-1"}) {
		t.Fatalf("woken round applied %v, want [local-1]", got)
	}
}

// endlessLocal always has a local command waiting.
type endlessLocal struct{ n int }

func (l *endlessLocal) Waiting() <-chan struct{} { return closedChan }

func (l *endlessLocal) Take(int) []Command {
	l.n++
	return []Command{localCommand(0, fmt.Sprintf("local-%d", l.n))}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Local commands never starve polled ones: a round that takes local
// commands also takes the commands the client holds, even when local
// commands wait at every round.
func TestLocalCommandsDoNotStarvePolledOnes(t *testing.T) {
	ctx, a := takenMember(t)
	local := &endlessLocal{}
	for a.appliedKeys()["cmd-0"] == 0 {
		countedRound(t, ctx, a, 10, local, a.apply)
	}
}
