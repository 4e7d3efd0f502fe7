package node

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A peer flooding a node with forwards or answers (which take no part of
// a link's budget) queues at most the queue's bound of them; the others
// are dropped, for their sources to send again, and the node's own
// commands are still taken and answered. Here node a's rounds are held
// (its write held) while the flood comes through the peers' Take.
func TestPeerForwardFloodStaysBounded(t *testing.T) {
	kc, k := fakeKafka(t)
	const maxBatch = 8
	a := startNode(t, k, t.TempDir(), func(c *Config) { c.MaxBatch = maxBatch })
	settled(t, a)
	ids := accounts(t, a, 2)
	released := holdWrite(t, kc, k, a, ids)
	before := a.local.len()

	bound := forwardsBound * maxBatch
	answers := kafkalog.AppendAnswers(nil, []kafkalog.Answer{{Source: 1, Destination: 0, Kind: kafkalog.Acked}})
	took := 0
	for range 4 * bound {
		if a.takePeer(0, nil, answers) {
			took++
		}
	}
	if took != bound {
		t.Fatalf("the node took %d of %d answers, want its bound %d", took, 4*bound, bound)
	}
	a.local.mu.Lock()
	forwards := a.local.forwards
	a.local.mu.Unlock()
	if forwards != bound {
		t.Fatalf("the queue counts %d forwards, want %d", forwards, bound)
	}

	read := make(chan error, 1)
	go func() {
		_, err := a.Ledger().Account(context.Background(), ids[0])
		read <- err
	}()
	queued(t, a, before+bound+1)
	released()
	if err := <-read; err != nil {
		t.Fatalf("the node's own read after the flood: %v", err)
	}
}

// The revoke of partitions hands the commands queued for them on to the
// commands topic at once, with no round running: here node a's rounds
// are held (its write held) while a read waits in its queue, and the
// test revokes the read's partition itself.
func TestRevokedHandsQueuedCommandsOnWithNoRound(t *testing.T) {
	kc, k := fakeKafka(t)
	a := startNode(t, k, t.TempDir())
	settled(t, a)
	ids := accounts(t, a, 2)
	released := holdWrite(t, kc, k, a, ids)
	before := a.local.len()

	read := make(chan error, 1)
	go func() {
		_, err := a.Ledger().Account(context.Background(), ids[0])
		read <- err
	}()
	queued(t, a, before+1)
	a.local.mu.Lock()
	c := a.local.cmds[before]
	others := 0 // the held transfer, if queued, is of the read's partition
	for _, q := range a.local.cmds {
		if q.Partition != c.Partition {
			others++
		}
	}
	a.local.mu.Unlock()
	key, p := bytes.Clone(c.Key), c.Partition

	a.revoked(context.Background(), []int32{p})
	if got := a.local.len(); got != others {
		t.Fatalf("after the revoke of %d the queue holds %d commands, want the %d of other partitions", p, got, others)
	}
	if err := commandAppended(t, k, p, key); err != nil {
		t.Fatal(err)
	}
	released()
	if err := <-read; err != nil {
		t.Fatalf("the read handed on: %v", err)
	}
}

// commandAppended waits until the commands topic's partition p holds a
// command with key; an error after a minute.
func commandAppended(t *testing.T, k kafkalog.Config, p int32, key []byte) error {
	t.Helper()
	cl, err := kgo.NewClient(append(k.Seeds(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		k.CommandsTopic(): {p: kgo.NewOffset().AtStart()},
	}))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		found := false
		fs.EachRecord(func(r *kgo.Record) { // commands travel packed
			_ = kafkalog.Unpack(r.Value, func(k, _ []byte) { found = found || bytes.Equal(k, key) })
		})
		if found {
			return nil
		}
	}
	return fmt.Errorf("no command with key %q on partition %d of the commands topic after 60 s", key, p)
}

// A forward or answers a peer sends for a partition the node does not
// write is dropped, not queued: its source sends it again, to the owner
// its directory knows then.
func TestPeerForwardOfAPartitionNotWrittenIsDropped(t *testing.T) {
	_, k := fakeKafka(t)
	a := startNode(t, k, t.TempDir())
	settled(t, a)
	b := joinNode(t, k, a)
	p := b.Owned()[0]
	if a.writes(p) {
		t.Fatalf("a writes %d, which b owns", p)
	}
	before := a.local.len()
	answers := kafkalog.AppendAnswers(nil, []kafkalog.Answer{{Source: p, Destination: (p + 1) % fakePartitions, Kind: kafkalog.Acked}})
	if a.takePeer(p, nil, answers) {
		t.Fatalf("a took answers for %d, a partition it does not write", p)
	}
	if got := a.local.len(); got != before {
		t.Fatalf("a's queue holds %d commands after the answers for %d, want %d", got, p, before)
	}
}
