package kafkalog

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestConfigNamesAndInboxes(t *testing.T) {
	c := Config{Brokers: []string{"127.0.0.1:9092"}, Partitions: 7}
	if c.CommandsTopic() != "surge.commands" || c.ChangelogTopic() != "surge.changelog" ||
		c.RepliesTopic() != "surge.replies" || c.Group() != "surge" {
		t.Fatalf("default names: %s %s %s %s", c.CommandsTopic(), c.ChangelogTopic(), c.RepliesTopic(), c.Group())
	}
	c.Cluster = "blue"
	if c.CommandsTopic() != "blue.commands" || c.Group() != "blue" {
		t.Fatalf("named cluster: %s %s", c.CommandsTopic(), c.Group())
	}
	seen := map[int32]bool{}
	for _, node := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		p := c.InboxPartition(node)
		if p < 0 || p >= c.Partitions {
			t.Fatalf("inbox of %s: partition %d of %d", node, p, c.Partitions)
		}
		if c.InboxPartition(node) != p {
			t.Fatalf("inbox of %s changes between calls", node)
		}
		seen[p] = true
	}
	if len(seen) < 2 {
		t.Fatalf("10 nodes all share inbox partition %v", seen)
	}
}

func TestConfigRefusesNoBrokersOrPartitions(t *testing.T) {
	for _, c := range []Config{
		{Partitions: 1},
		{Brokers: []string{"127.0.0.1:9092"}},
		{Brokers: []string{"127.0.0.1:9092"}, Partitions: -2},
	} {
		if err := c.validate(); err == nil {
			t.Errorf("%+v: validate passed", c)
		}
		if _, err := NewProducer(c); err == nil {
			t.Errorf("%+v: NewProducer passed", c)
		}
	}
}

// A poll that reports a failed group join (the coordinator moved, as when a
// broker dies) or a retriable broker error is not a failed round: the
// client retries by itself. Anything else ends the member's rounds.
func TestTransientPollErrors(t *testing.T) {
	for err, want := range map[error]bool{
		&kgo.ErrGroupSession{Err: kerr.NotCoordinator}:                                     true,
		fmt.Errorf("wrapped: %w", &kgo.ErrGroupSession{Err: kerr.CoordinatorNotAvailable}): true,
		kerr.NotLeaderForPartition:                                                         true,
		kerr.TopicAuthorizationFailed:                                                      false,
		&kgo.ErrDataLoss{Topic: "t", Partition: 1, ConsumedTo: 9, ResetTo: 3}:              false,
		errors.New("kaput"):                                                                false,
	} {
		if got := transient(err); got != want {
			t.Errorf("transient(%v) = %v, want %v", err, got, want)
		}
	}
}
