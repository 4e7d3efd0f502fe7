package kafkalog

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/cluster/kafkatest"
)

// The package's tests that call newCluster run against the real Kafka
// broker kafkatest shares; those that call fakeCluster or fakeBrokers run
// on a kfake cluster of their own.

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
