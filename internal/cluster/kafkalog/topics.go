package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrTopicMismatch reports a cluster topic that exists with another number
// of partitions or another cleanup policy than the Config asks for.
var ErrTopicMismatch = errors.New("kafkalog: existing topic does not match the configuration")

// replyRetention keeps replies for an hour: a reply is read within the
// request's deadline, so older ones only take disk.
const replyRetention = "3600000"

// MaxRecordBytes bounds a record of the cluster's topics, set as their
// max.message.bytes and as the producers' batch limit: an atomic batch of
// a single node's 8,190 items travels across partitions as one command
// carrying all its items (ledgercluster atomic.go), several MiB, over Kafka's
// default of 1 MiB.
const MaxRecordBytes = 8 << 20

var maxRecordBytes = kadm.StringPtr(strconv.Itoa(MaxRecordBytes))

// changelogCompactionLag is the changelog's min.compaction.lag.ms: the log
// cleaner leaves a record alone this long. An owner writes again the keys
// a zombie's records changed, and that repair must count before the
// cleaner could keep the zombie's record and drop the value that counts
// ("Rounds without a transaction", docs/CLUSTER.md). The repair comes
// within a round of the owner's claim, which comes within a session
// timeout of the zombie's expulsion; an owner that dies before its first
// write leaves it to the next one. An hour covers dozens of such owners in
// a row at the default session timeout, and costs an hour of the
// changelog's writes kept uncompacted on the brokers' disks.
const changelogCompactionLag = "3600000"

// changelogTimestamps is the changelog's message.timestamp.type: the
// compaction lag counts from a record's timestamp, which with CreateTime
// is the writer's clock. A zombie's clock behind could make the cleaner
// take its records for older than they are, and compact them over the
// values that count before the owner's repair; the broker's append time
// makes the lag count from the write's landing.
const changelogTimestamps = "LogAppendTime"

// topicSpec is one cluster topic as EnsureTopics creates and checks it.
type topicSpec struct {
	name    string
	configs map[string]*string
	// enforced are the configs EnsureTopics sets on the topic if it
	// exists: a topic made by a node of an earlier version lacks them.
	enforced []string
}

func (c Config) topicSpecs() []topicSpec {
	return []topicSpec{
		{c.CommandsTopic(), map[string]*string{"cleanup.policy": kadm.StringPtr("delete"), "max.message.bytes": maxRecordBytes}, []string{"max.message.bytes"}},
		{c.ChangelogTopic(), map[string]*string{
			"cleanup.policy":         kadm.StringPtr("compact"),
			"max.message.bytes":      maxRecordBytes,
			"min.compaction.lag.ms":  kadm.StringPtr(changelogCompactionLag),
			"message.timestamp.type": kadm.StringPtr(changelogTimestamps),
		}, []string{"max.message.bytes", "min.compaction.lag.ms", "message.timestamp.type"}},
		{c.RepliesTopic(), map[string]*string{
			"cleanup.policy":    kadm.StringPtr("delete"),
			"retention.ms":      kadm.StringPtr(replyRetention),
			"max.message.bytes": maxRecordBytes,
		}, []string{"max.message.bytes"}},
	}
}

// Replicas is the replication factor to create a topic with:
// ReplicationFactor, or -1 (the brokers' default.replication.factor) if
// it is unset.
func (c Config) Replicas() int16 {
	if c.ReplicationFactor == 0 {
		return -1
	}
	return c.ReplicationFactor
}

// EnsureTopics creates the cluster's topics with c.Partitions partitions
// each, or, for those that exist, checks that they have that many
// partitions and exactly the cleanup policy the cluster needs, and sets
// their enforced configs (max.message.bytes, the changelog's
// min.compaction.lag.ms and message.timestamp.type). It returns once the
// brokers serve every partition.
func EnsureTopics(ctx context.Context, cl *kgo.Client, c Config) error {
	if err := c.validate(); err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	for _, t := range c.topicSpecs() {
		resp, err := adm.CreateTopic(ctx, c.Partitions, c.Replicas(), t.configs, t.name)
		switch {
		case errors.Is(err, kerr.TopicAlreadyExists):
			if err := checkTopic(ctx, adm, t, c.Partitions); err != nil {
				return err
			}
			if err := setEnforced(ctx, adm, t); err != nil {
				return err
			}
		case err != nil:
			return fmt.Errorf("kafkalog: creating %s: %w", t.name, err)
		case resp.Err != nil:
			return fmt.Errorf("kafkalog: creating %s: %w", t.name, resp.Err)
		}
	}
	return waitTopics(ctx, cl, c)
}

// waitTopics returns once the brokers' metadata shows every partition of
// the cluster's topics with a leader: a topic just created reaches the
// brokers' metadata caches a little after CreateTopics returns. It asks the
// brokers each time, past the client's metadata cache.
func waitTopics(ctx context.Context, cl *kgo.Client, c Config) error {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{c.CommandsTopic(), c.ChangelogTopic(), c.RepliesTopic()} {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, t)
	}
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && topicsReady(resp, c.Partitions) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkalog: waiting for the topics of %s: %w", c.name(), ctx.Err())
		case <-time.After(wait):
		}
	}
}

func topicsReady(resp *kmsg.MetadataResponse, partitions int32) bool {
	for _, t := range resp.Topics {
		if t.ErrorCode != 0 || int32(len(t.Partitions)) != partitions {
			return false
		}
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				return false
			}
		}
	}
	return len(resp.Topics) == 3
}

// checkTopic compares an existing topic with its spec.
func checkTopic(ctx context.Context, adm *kadm.Client, t topicSpec, partitions int32) error {
	details, err := adm.ListTopics(ctx, t.name)
	if err != nil {
		return fmt.Errorf("kafkalog: describing %s: %w", t.name, err)
	}
	d := details[t.name]
	if d.Err != nil {
		return fmt.Errorf("kafkalog: describing %s: %w", t.name, d.Err)
	}
	if got := int32(len(d.Partitions)); got != partitions {
		return fmt.Errorf("%w: %s has %d partitions, configured %d", ErrTopicMismatch, t.name, got, partitions)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, t.name)
	if err != nil {
		return fmt.Errorf("kafkalog: describing %s's configs: %w", t.name, err)
	}
	rc, err := configs.On(t.name, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return fmt.Errorf("kafkalog: describing %s's configs: %w", t.name, err)
	}
	want := *t.configs["cleanup.policy"]
	for _, cfg := range rc.Configs {
		if cfg.Key == "cleanup.policy" && !slices.Equal(splitPolicy(cfg.MaybeValue()), []string{want}) {
			return fmt.Errorf("%w: %s has cleanup.policy %q, want exactly %q", ErrTopicMismatch, t.name, cfg.MaybeValue(), want)
		}
	}
	return nil
}

// setEnforced sets an existing topic's enforced configs to the spec's.
func setEnforced(ctx context.Context, adm *kadm.Client, t topicSpec) error {
	var set []kadm.AlterConfig
	for _, name := range t.enforced {
		set = append(set, kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: t.configs[name]})
	}
	resp, err := adm.AlterTopicConfigs(ctx, set, t.name)
	if err == nil {
		var r kadm.AlterConfigsResponse
		if r, err = resp.On(t.name, nil); err == nil {
			err = r.Err
		}
	}
	if err != nil {
		return fmt.Errorf("kafkalog: setting %s's %v: %w", t.name, t.enforced, err)
	}
	return nil
}

// splitPolicy splits a cleanup.policy value such as "compact,delete".
func splitPolicy(v string) []string {
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		out = append(out, strings.TrimSpace(p))
	}
	return out
}
