package kafkalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/cluster/kafkatest"
)

// These tests run against a real Kafka broker (kafkatest), never kfake:
// they are about what the broker does with transactions and groups.

func TestMain(m *testing.M) { kafkatest.Main(m) }

// testTimeout bounds each test; a broker that does not answer fails it.
const testTimeout = 2 * time.Minute

// sessionTimeout is the least the broker allows: a frozen member loses its
// partitions after it.
const sessionTimeout = 6 * time.Second

// newCluster names a fresh surge cluster on the shared broker and creates
// its topics.
func newCluster(t *testing.T, partitions int32) (context.Context, Config) {
	t.Helper()
	k := kafkatest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	name := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()) + "-" + uuid.NewString()[:8]
	c := Config{Brokers: k.Brokers, Cluster: name, Partitions: partitions, SessionTimeout: sessionTimeout}
	if err := EnsureTopics(ctx, newClient(t, c), c); err != nil {
		t.Fatal(err)
	}
	return ctx, c
}

func newClient(t *testing.T, c Config) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// appendCommands appends n commands "cmd-i", i in [from, from+n), to
// partition i % Partitions.
func appendCommands(t *testing.T, ctx context.Context, c Config, from, n int) {
	t.Helper()
	p, err := NewProducer(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := from; i < from+n; i++ {
		key := []byte("cmd-" + strconv.Itoa(i))
		if _, err := p.Append(ctx, int32(i)%c.Partitions, key, key); err != nil {
			t.Fatal(err)
		}
	}
}

// echo is a round's transform for the tests: every command gets a reply
// (to node's inbox) and a changelog record, both keyed by the command's key
// and valued by tag.
func echo(c Config, node, tag string) Apply {
	return func(_ context.Context, batch []Command) ([]Output, error) {
		outs := make([]Output, 0, 2*len(batch))
		for _, cmd := range batch {
			outs = append(outs,
				Output{Kind: Reply, Partition: c.InboxPartition(node), Key: cmd.Key, Value: []byte(tag)},
				Output{Kind: Change, Partition: cmd.Partition, Key: cmd.Key, Value: []byte(tag)})
		}
		return outs, nil
	}
}

// readTo gives fn every record of topic/partition from its start to its
// high watermark as of the call (see endOffset and readRange).
func readTo(ctx context.Context, c Config, topic string, partition int32, committed bool, fn func(*kgo.Record) error, opts []kgo.Opt) error {
	if err := c.validate(); err != nil {
		return err
	}
	end, err := endOffset(ctx, c, topic, partition, committed, opts)
	if err != nil {
		return err
	}
	return readRange(ctx, c, topic, partition, 0, end, committed, fn, opts)
}

// readAll returns the data records of every partition of topic, up to its
// end now: committed ones only, or all (aborted included).
func readAll(t *testing.T, ctx context.Context, c Config, topic string, committed bool) []*kgo.Record {
	t.Helper()
	var out []*kgo.Record
	for p := range c.Partitions {
		err := readTo(ctx, c, topic, p, committed, func(r *kgo.Record) error {
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// countKeys counts the records of each key.
func countKeys(rs []*kgo.Record) map[string]int {
	n := map[string]int{}
	for _, r := range rs {
		n[string(r.Key)]++
	}
	return n
}

// exactlyOnce fails t unless each of the n commands has exactly one record.
func exactlyOnce(t *testing.T, what string, rs []*kgo.Record, n int) {
	t.Helper()
	got := countKeys(rs)
	for i := range n {
		if k := "cmd-" + strconv.Itoa(i); got[k] != 1 {
			t.Errorf("%s: %s has %d records, want exactly 1", what, k, got[k])
		}
	}
	if len(got) != n {
		t.Errorf("%s: %d distinct keys, want %d", what, len(got), n)
	}
}

func TestEnsureTopicsCreatesThenChecks(t *testing.T) {
	ctx, c := newCluster(t, 4)
	cl := newClient(t, c)
	adm := kadm.NewClient(cl)
	// A changelog made by an earlier version has no compaction lag, and
	// its records' timestamps are their writers' clocks.
	unset := []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "min.compaction.lag.ms"},
		{Op: kadm.DeleteConfig, Name: "message.timestamp.type"},
	}
	if _, err := adm.AlterTopicConfigs(ctx, unset, c.ChangelogTopic()); err != nil {
		t.Fatal(err)
	}
	if err := EnsureTopics(ctx, cl, c); err != nil {
		t.Fatalf("second EnsureTopics on matching topics: %v", err)
	}
	details, err := adm.ListTopics(ctx, c.CommandsTopic(), c.ChangelogTopic(), c.RepliesTopic())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{c.CommandsTopic(), c.ChangelogTopic(), c.RepliesTopic()} {
		if got := len(details[name].Partitions); got != 4 {
			t.Errorf("%s has %d partitions, want 4", name, got)
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, c.ChangelogTopic())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.On(c.ChangelogTopic(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range cfg.Configs {
		if kv.Key == "cleanup.policy" && kv.MaybeValue() != "compact" {
			t.Errorf("changelog cleanup.policy = %q, want compact", kv.MaybeValue())
		}
		if kv.Key == "min.compaction.lag.ms" && kv.MaybeValue() != changelogCompactionLag {
			t.Errorf("changelog min.compaction.lag.ms = %q, want %s", kv.MaybeValue(), changelogCompactionLag)
		}
		if kv.Key == "message.timestamp.type" && kv.MaybeValue() != "LogAppendTime" {
			t.Errorf("changelog message.timestamp.type = %q, want LogAppendTime", kv.MaybeValue())
		}
	}
	// Retention would delete epoch records: a changelog compacted and
	// deleted is refused.
	both := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact,delete")}}
	if _, err := adm.AlterTopicConfigs(ctx, both, c.ChangelogTopic()); err != nil {
		t.Fatal(err)
	}
	if err := EnsureTopics(ctx, cl, c); !errors.Is(err, ErrTopicMismatch) {
		t.Fatalf("EnsureTopics over a changelog compacted and deleted: %v, want ErrTopicMismatch", err)
	}
	other := c
	other.Partitions = 5
	if err := EnsureTopics(ctx, cl, other); !errors.Is(err, ErrTopicMismatch) {
		t.Fatalf("EnsureTopics with 5 partitions over 4: %v, want ErrTopicMismatch", err)
	}
}

// join makes node a member of c's group for the test's duration.
func join(t *testing.T, ctx context.Context, c Config, node string, h Handlers) *Member {
	t.Helper()
	m, err := Join(ctx, c, node, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// committedSet tracks which commands committed rounds have done, from
// several members' goroutines, and ends ctx once all n are done.
type committedSet struct {
	mu     sync.Mutex
	done   map[string]int
	n      int
	cancel context.CancelFunc
}

func (s *committedSet) add(batch []Command) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cmd := range batch {
		s.done[string(cmd.Key)]++
	}
	if len(s.done) >= s.n {
		s.cancel()
	}
}

// runRounds runs m's rounds with apply until ctx ends; rounds that commit
// are added to set. It returns the first error of a round other than the
// end of ctx.
func runRounds(ctx context.Context, m *Member, apply Apply, set *committedSet) error {
	for {
		var batch []Command
		res, err := m.Round(ctx, 50, func(ctx context.Context, b []Command) ([]Output, error) {
			batch = b
			return apply(ctx, b)
		})
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		case res.Committed:
			set.add(batch)
		}
	}
}

// runUntilDone runs the members' rounds concurrently until committed rounds
// have done all n commands.
func runUntilDone(t *testing.T, ctx context.Context, n int, members map[string]*Member, apply func(node string) Apply) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	set := &committedSet{done: map[string]int{}, n: n, cancel: cancel}
	errs := make(chan error, len(members))
	for node, m := range members {
		go func() { errs <- runRounds(ctx, m, apply(node), set) }()
	}
	for range members {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if len(set.done) < n {
		t.Fatalf("rounds committed %d of %d commands before the test's deadline", len(set.done), n)
	}
}

func TestRoundIsExactlyOnceAcrossRebalance(t *testing.T) {
	const n = 200
	ctx, c := newCluster(t, 4)
	appendCommands(t, ctx, c, 0, n)

	revoked := make(chan struct{})
	var once sync.Once
	a := join(t, ctx, c, "a", Handlers{Revoked: func(context.Context, []int32) { once.Do(func() { close(revoked) }) }})
	// a's first round is caught by b joining the group: it goes on only once
	// some of a's partitions were revoked, so its transaction must abort.
	var b *Member
	res, err := a.Round(ctx, 50, func(ctx context.Context, batch []Command) ([]Output, error) {
		b = join(t, ctx, c, "b", Handlers{})
		select {
		case <-revoked:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return echo(c, "a", "a")(ctx, batch)
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commands == 0 || res.Committed {
		t.Fatalf("round across the rebalance: %+v, want commands read and the round aborted", res)
	}
	runUntilDone(t, ctx, n, map[string]*Member{"a": a, "b": b}, func(node string) Apply { return echo(c, node, node) })

	exactlyOnce(t, "committed replies", readAll(t, ctx, c, c.RepliesTopic(), true), n)
	all := readAll(t, ctx, c, c.RepliesTopic(), false)
	if len(all) <= n {
		t.Fatalf("replies incl. aborted: %d, want more than %d: the aborted round wrote nothing", len(all), n)
	}
	var restored []*kgo.Record
	for p := range c.Partitions {
		err := Restore(ctx, c, p, func(k, v []byte) error {
			restored = append(restored, &kgo.Record{Key: k, Value: v})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	exactlyOnce(t, "restored changelog", restored, n)
	if owned := append(a.Owned(), b.Owned()...); len(owned) > int(c.Partitions) {
		t.Errorf("a owns %v and b owns %v: a partition has two owners", a.Owned(), b.Owned())
	}
}

func TestRestartedNodeFencesItsFormerIncarnation(t *testing.T) {
	const n = 10
	ctx, c := newCluster(t, 1)
	appendCommands(t, ctx, c, 0, n)
	old := join(t, ctx, c, "n1", Handlers{})
	var fresh *Member
	res, err := old.Round(ctx, n, func(ctx context.Context, batch []Command) ([]Output, error) {
		fresh = join(t, ctx, c, "n1", Handlers{}) // the same node id: fences old
		return echo(c, "n1", "old")(ctx, batch)
	})
	if err == nil || res.Committed {
		t.Fatalf("round of the fenced incarnation: %+v, %v; want an error and no commit", res, err)
	}
	t.Logf("the former incarnation's round failed as it must: %v", err)
	old.Close() // its partition moves to the new incarnation
	runUntilDone(t, ctx, n, map[string]*Member{"n1": fresh}, func(string) Apply { return echo(c, "n1", "new") })

	replies := readAll(t, ctx, c, c.RepliesTopic(), true)
	exactlyOnce(t, "committed replies", replies, n)
	for _, r := range replies {
		if string(r.Value) != "new" {
			t.Errorf("committed reply %s from the %s incarnation", r.Key, r.Value)
		}
	}
}

func TestAbortedRoundIsInvisibleToReadCommitted(t *testing.T) {
	const n = 5
	ctx, c := newCluster(t, 1)
	appendCommands(t, ctx, c, 0, n)
	m := join(t, ctx, c, "n1", Handlers{})
	// A round whose last output cannot be written (over the producer's
	// batch limit) aborts after its other outputs went to the broker.
	res, err := m.Round(ctx, n, func(ctx context.Context, batch []Command) ([]Output, error) {
		outs, _ := echo(c, "n1", "aborted")(ctx, batch)
		tooBig := Output{Kind: Reply, Key: []byte("too-big"), Value: make([]byte, MaxRecordBytes+1)}
		return append(outs, tooBig), nil
	})
	if err == nil || res.Committed {
		t.Fatalf("round with an unwritable output: %+v, %v; want an error and no commit", res, err)
	}
	runUntilDone(t, ctx, n, map[string]*Member{"n1": m}, func(string) Apply { return echo(c, "n1", "committed") })

	committed := readAll(t, ctx, c, c.RepliesTopic(), true)
	exactlyOnce(t, "committed replies", committed, n)
	for _, r := range committed {
		if string(r.Value) != "committed" {
			t.Errorf("read_committed sees reply %s of the %s round", r.Key, r.Value)
		}
	}
	aborted := 0
	for _, r := range readAll(t, ctx, c, c.RepliesTopic(), false) {
		if string(r.Value) == "aborted" {
			aborted++
		}
	}
	if aborted == 0 {
		t.Fatal("no output of the aborted round reached the broker: the test shows nothing")
	}
	t.Logf("%d outputs of the aborted round are in the log, none visible to read_committed", aborted)
}

// Records of several MiB, over Kafka's default limit of 1 MiB, go through:
// a command appended, and a round's forward and reply.
func TestLargeRecordsGoThrough(t *testing.T) {
	ctx, c := newCluster(t, 2)
	p, err := NewProducer(c)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	big := bytes.Repeat([]byte("x"), 3<<20)
	if _, err := p.Append(ctx, 0, []byte("big"), big); err != nil {
		t.Fatal(err)
	}
	m := join(t, ctx, c, "n1", Handlers{})
	forwarded := false
	for !forwarded {
		res, err := m.Round(ctx, 10, func(_ context.Context, batch []Command) ([]Output, error) {
			var outs []Output
			for _, cmd := range batch {
				if len(cmd.Value) != len(big) {
					return nil, fmt.Errorf("command %s of %d bytes, want %d", cmd.Key, len(cmd.Value), len(big))
				}
				if cmd.Partition == 0 {
					outs = append(outs, Output{Kind: Forward, Partition: 1, Key: []byte("big-forward"), Value: cmd.Value})
				} else {
					forwarded = true
					outs = append(outs, Output{Kind: Reply, Partition: 0, Key: []byte("cmd-0"), Value: cmd.Value})
				}
			}
			return outs, nil
		})
		if err != nil || (res.Commands > 0 && !res.Committed) {
			t.Fatalf("round %+v: %v", res, err)
		}
	}
	replies := readAll(t, ctx, c, c.RepliesTopic(), true)
	if len(replies) != 1 || len(replies[0].Value) != len(big) {
		t.Fatalf("%d replies, want one of %d bytes", len(replies), len(big))
	}
}

// TestRoundAfterOneLeftOpen: a round that fails before it asks for its
// commit (its records' flush ran out of time, as during a broker's death)
// and whose abort fails too leaves its transaction open; that does not
// leave the member unable to begin a round. The open transaction is made
// here directly; the next round aborts it, reads the commands again and
// commits them once.
func TestRoundAfterOneLeftOpen(t *testing.T) {
	const n = 4
	ctx, c := newCluster(t, 1)
	appendCommands(t, ctx, c, 0, n)
	m := join(t, ctx, c, "n1", Handlers{})
	if err := m.s.Begin(); err != nil {
		t.Fatal(err)
	}
	m.open = true
	runUntilDone(t, ctx, n, map[string]*Member{"n1": m}, func(string) Apply { return echo(c, "n1", "committed") })
	exactlyOnce(t, "committed replies", readAll(t, ctx, c, c.RepliesTopic(), true), n)
}
