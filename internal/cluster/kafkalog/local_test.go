package kafkalog

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// A round that took only local commands polled no offset, so franz-go
// would commit its transaction without asking the group coordinator: the
// round commits its partitions' offsets again, at their position, so that
// the coordinator checks the member's generation. Answered
// ILLEGAL_GENERATION, as Kafka answers a member expelled from the group
// (TestPausedOwnerOfLocalCommandsIsFenced), the round does not commit and
// its records stay invisible to read_committed readers.
func TestLocalRoundIsFencedByTheGroup(t *testing.T) {
	kc, ctx, c := fakeCluster(t, 2)
	appendCommands(t, ctx, c, 0, 2)
	m := join(t, ctx, c, "a", Handlers{})
	if res, err := m.Round(ctx, 10, echo(c, "a", "a")); err != nil || !res.Committed || res.Commands == 0 {
		t.Fatalf("polled round: %+v, %v", res, err)
	}
	for !(m.Takes(0) && m.Takes(1)) { // the first round may have polled one partition only
		if res, err := m.Round(ctx, 10, echo(c, "a", "a")); err != nil || !res.Committed {
			t.Fatalf("polled round: %+v, %v", res, err)
		}
	}

	var (
		mu      sync.Mutex
		offsets [][]int32 // the partitions of each TxnOffsetCommit
		refuse  bool
	)
	kc.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		r := req.(*kmsg.TxnOffsetCommitRequest)
		var ps []int32
		for _, rt := range r.Topics {
			for _, rp := range rt.Partitions {
				ps = append(ps, rp.Partition)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		offsets = append(offsets, ps)
		if !refuse {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		resp.Default()
		for _, rt := range r.Topics {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.IllegalGeneration.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})

	res, err := m.RoundWait(ctx, ctx, 10, newTestLocal(localCommand(1, "kept")), echo(c, "a", "a"))
	if err != nil || !res.Committed || res.Commands != 1 {
		t.Fatalf("local round: %+v, %v; want committed with 1 command", res, err)
	}
	mu.Lock()
	if len(offsets) != 1 || !slices.Equal(offsets[0], []int32{1}) {
		t.Fatalf("the local round committed the offsets of %v, want [[1]]", offsets)
	}
	refuse = true
	mu.Unlock()
	res, err = m.RoundWait(ctx, ctx, 10, newTestLocal(localCommand(0, "fenced")), echo(c, "a", "a"))
	if err != nil || res.Committed {
		t.Fatalf("local round refused by the group: %+v, %v; want not committed", res, err)
	}
	keys := countKeys(readAll(t, ctx, c, c.ChangelogTopic(), true))
	if keys["kept"] != 1 || keys["fenced"] != 0 {
		t.Fatalf("committed changelog records: %v; want kept once, fenced never", keys)
	}
}

// positionedMember is a member of a one-partition cluster whose first
// round committed command 0, so that it takes local commands, with
// command 1 appended for it to poll.
func positionedMember(t *testing.T) (context.Context, Config, *Member) {
	t.Helper()
	_, ctx, c := fakeCluster(t, 1)
	appendCommands(t, ctx, c, 0, 1)
	m := join(t, ctx, c, "a", Handlers{})
	if res, err := m.Round(ctx, 10, echo(c, "a", "a")); err != nil || !res.Committed {
		t.Fatalf("polled round: %+v, %v", res, err)
	}
	appendCommands(t, ctx, c, 1, 1)
	return ctx, c, m
}

// A round takes the local commands beside those it polls, the local ones
// first, and a local command wakes a round waiting for commands.
func TestRoundTakesLocalAndPolledCommands(t *testing.T) {
	ctx, c, m := positionedMember(t)
	var got []string
	record := func(ctx context.Context, batch []Command) ([]Output, error) {
		for _, cmd := range batch {
			got = append(got, string(cmd.Key))
		}
		return echo(c, "a", "a")(ctx, batch)
	}
	local := newTestLocal(localCommand(0, "local-0"))
	for len(got) < 2 {
		if res, err := m.RoundWait(ctx, ctx, 10, local, record); err != nil || !res.Committed {
			t.Fatalf("round: %+v, %v", res, err)
		}
	}
	if got[0] != "local-0" || got[1] != "cmd-1" {
		t.Fatalf("rounds applied %v, want local-0 then cmd-1", got)
	}
	// A round waiting with nothing to poll is woken by a local command.
	woken := newTestLocal()
	go woken.add(localCommand(0, "local-1"))
	got = nil
	for len(got) == 0 {
		if _, err := m.RoundWait(ctx, ctx, 10, woken, record); err != nil {
			t.Fatal(err)
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
	ctx, c, m := positionedMember(t)
	polled := false
	record := func(ctx context.Context, batch []Command) ([]Output, error) {
		for _, cmd := range batch {
			polled = polled || string(cmd.Key) == "cmd-1"
		}
		return echo(c, "a", "a")(ctx, batch)
	}
	local := &endlessLocal{}
	for !polled {
		if res, err := m.RoundWait(ctx, ctx, 10, local, record); err != nil || !res.Committed {
			t.Fatalf("round %d: %+v, %v (the polled command never taken)", local.n, res, err)
		}
	}
}
