package kafkalog

import "testing"

func TestConfigNamesAndInboxes(t *testing.T) {
	c := Config{Brokers: []string{"127.0.0.1:9092"}, Partitions: 7}
	if c.CommandsTopic() != "surge.commands" || c.ChangelogTopic() != "surge.changelog" ||
		c.RepliesTopic() != "surge.replies" || c.Group() != "surge" || c.TransactionalID("n1") != "surge.n1" {
		t.Fatalf("default names: %s %s %s %s %s", c.CommandsTopic(), c.ChangelogTopic(), c.RepliesTopic(), c.Group(), c.TransactionalID("n1"))
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
