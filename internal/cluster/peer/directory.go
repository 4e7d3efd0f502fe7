package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// The nodes topic, C.nodes (one partition, compacted), is the cluster's
// directory of peer links: each node writes, keyed by its id, its peer
// address, its certificate's fingerprint and the partitions it owns, at
// its start and each time it has restored the partitions it now owns; every
// node reads the whole topic. A partition's owner is the latest node whose
// entry lists it. The directory is only a hint: the node a command is sent
// to checks that it owns the partition, and appends the command to the
// commands topic if it does not. Its trust is who may write the topic:
// whoever can write it can already write commands.

// entry is a node's record in the nodes topic.
type entry struct {
	Addr  string  `json:"addr"`
	FP    string  `json:"fp"`
	Owned []int32 `json:"owned"`
}

// NodesTopic names the cluster's nodes topic.
func NodesTopic(c kafkalog.Config) string { return c.Group() + ".nodes" }

// directory is what a node read of the nodes topic.
type directory struct {
	mu    sync.RWMutex
	nodes map[string]entry
	// owner is each partition's latest claimant ("" for none).
	owner []string
	// fps names the node of each fingerprint published.
	fps map[string]string
}

func newDirectory(partitions int32) *directory {
	return &directory{nodes: map[string]entry{}, owner: make([]string, partitions), fps: map[string]string{}}
}

// set records node's entry (a zero entry: the node left).
func (d *directory) set(node string, e entry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.Addr == "" {
		delete(d.nodes, node)
	} else {
		d.nodes[node] = e
	}
	for p, o := range d.owner {
		if o == node {
			d.owner[p] = ""
		}
	}
	for _, p := range e.Owned {
		if p >= 0 && int(p) < len(d.owner) {
			d.owner[p] = node
		}
	}
	clear(d.fps)
	for node, n := range d.nodes {
		d.fps[n.FP] = node
	}
}

// lookup returns the node owning partition p as far as the directory
// knows, and its entry.
func (d *directory) lookup(p int32) (string, entry, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if p < 0 || int(p) >= len(d.owner) || d.owner[p] == "" {
		return "", entry{}, false
	}
	n := d.owner[p]
	e, ok := d.nodes[n]
	return n, e, ok
}

// known reports whether a node published the fingerprint fp.
func (d *directory) known(fp string) bool { return d.nodeOf(fp) != "" }

// nodeOf is the node that published the fingerprint fp ("" for none).
func (d *directory) nodeOf(fp string) string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.fps[fp]
}

// nodesLog writes the node's entry to the nodes topic and reads the topic
// into a directory.
type nodesLog struct {
	cl    *kgo.Client
	topic string
	dir   *directory
	log   *slog.Logger
	done  chan struct{}
}

// openNodesLog creates the nodes topic if it is missing and reads it from
// its start into dir.
func openNodesLog(ctx context.Context, c kafkalog.Config, dir *directory, log *slog.Logger) (*nodesLog, error) {
	topic := NodesTopic(c)
	cl, err := kgo.NewClient(append(c.SeedsFor("nodes"),
		kgo.DefaultProduceTopic(topic),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
	)...)
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, c.Replicas(), map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		cl.Close()
		return nil, fmt.Errorf("peer: creating %s: %w", topic, err)
	}
	l := &nodesLog{cl: cl, topic: topic, dir: dir, log: log, done: make(chan struct{})}
	go l.read()
	return l, nil
}

// publish writes node's entry.
func (l *nodesLog) publish(ctx context.Context, node string, e entry) error {
	v, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return l.cl.ProduceSync(ctx, &kgo.Record{Key: []byte(node), Value: v}).FirstErr()
}

// read applies the topic's records to the directory until the client
// closes.
func (l *nodesLog) read() {
	defer close(l.done)
	for {
		fetches := l.cl.PollFetches(context.Background())
		if fetches.IsClientClosed() {
			return
		}
		fetches.EachError(func(t string, p int32, err error) {
			l.log.Warn("cluster: reading the nodes topic", "topic", t, "partition", p, "err", err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			var e entry
			if len(r.Value) > 0 {
				if err := json.Unmarshal(r.Value, &e); err != nil {
					l.log.Warn("cluster: a malformed entry of the nodes topic", "offset", r.Offset, "err", err)
					return
				}
			}
			l.dir.set(string(r.Key), e)
		})
	}
}

func (l *nodesLog) close() {
	l.cl.Close()
	<-l.done
}
