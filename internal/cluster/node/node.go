// Package node runs a surge node of a cluster on Apache Kafka
// (docs/CLUSTER.md): it joins the cluster, owns some of its partitions and
// runs the engine's rounds over them, each owned partition's part of a
// round one write of its changelog with no Kafka transaction ("Rounds
// without a transaction"), handing each command to its workload by its
// first byte.
// Its calls to partitions go through internal/cluster/calls, its restores
// through internal/cluster/changelog; internal/cluster/kafkalog is the
// Kafka layer below it. It builds the workloads' thin clients
// (ledgercluster, ticketcluster, kvcluster) over its calls.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/changelog"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/cluster/peer"
	"github.com/surge-dev/surge/internal/kv/kvcluster"
	"github.com/surge-dev/surge/internal/ledger/ledgercluster"
	"github.com/surge-dev/surge/internal/tickets/ticketcluster"
)

// Config sets up a node.
type Config struct {
	// Kafka locates the cluster.
	Kafka kafkalog.Config
	// Dir is the node's data directory: its id, its cache of the owned
	// partitions' state and its local snapshot of the changelog.
	Dir string
	// SnapshotFS is the file system under the node's local snapshot (nil:
	// the operating system's); tests inject faults through it.
	SnapshotFS vfs.FS
	// SnapshotMemTable is the local snapshot's memtable size (0: 64 MiB).
	// The snapshot keeps no WAL: a kill -9 loses its memtables, whose
	// records a take reads again from the changelog
	// (changelog.SnapshotOptions).
	SnapshotMemTable uint64
	// Currency is the currency of @world when the ledger is first created.
	Currency string
	// MaxBatch bounds the commands a round reads (0: 4096).
	MaxBatch int
	// RoundTimeout bounds a round's apply and write, from when its state
	// is built: a partition whose write the brokers do not acknowledge by
	// then (its leader gone) has an unknown outcome and is taken again,
	// and holds the other partitions' commands no longer (0: 5 s).
	RoundTimeout time.Duration
	// Peer, if set, has the node send commands for other nodes'
	// partitions straight to them, and take theirs, over peer links
	// (owner_peer.go); the node sets its Node, Dir, Kafka and Logger.
	Peer *peer.Config
	// Logger receives operational messages; nil means slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.MaxBatch <= 0 {
		c.MaxBatch = 4096
	}
	if c.RoundTimeout <= 0 {
		c.RoundTimeout = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Currency == "" {
		c.Currency = "USD"
	}
}

// Node is a running cluster node.
type Node struct {
	cfg Config
	id  string
	// member is the node's member of the group, set once it joined: the
	// group's first callbacks, and the forwards they send, may come
	// before.
	member atomic.Pointer[kafkalog.ChainMember]
	// leaveGroup closes the member once: when the node stops, or when its
	// local copy breaks (leave).
	leaveGroup func()
	writer     *kafkalog.Writer
	owner      *kafkalog.Owner
	fwd        *kafkalog.Forwarder
	// replies produces the replies to other nodes' requests that no peer
	// link carries (owner_replies.go).
	replies *replySender
	caller  *calls.Caller
	// peers are the node's links to the others; nil without them.
	peers  *peer.Peers
	ledger *ledgercluster.Ledger
	kv     *kvcluster.KV
	seats  *ticketcluster.Tickets
	snaps  *changelog.Snapshots
	// takes are the restores of the takes under way (owner_takes.go).
	takes takes
	// local holds the commands the node takes for its own partitions
	// until a round takes them (owner_local.go).
	local *localQueue
	// gen counts the changes of the partitions the member writes; built
	// is the gen the owner's state was last built for (owner.go).
	gen, built atomic.Uint64
	ready      atomic.Bool
	onReady    func(bool)
	cancel     context.CancelFunc
	done       sync.WaitGroup
	// forwards runs the appends of commands the node took but does not
	// apply (owner_local.go).
	forwards forwards
}

// forwardResend is how long a source partition waits for a destination
// to acknowledge what it owes before it sends it again; forwardTick is
// how often the node looks.
const (
	forwardResend = 2 * time.Second
	forwardTick   = 250 * time.Millisecond
)

// Start joins the cluster: it creates or checks the topics, reads the
// node's id from Dir (made on first start), starts reading its replies and
// joins the consumer group. onReady is told when the node becomes ready
// (it owns partitions and has restored them) or stops being so.
func Start(ctx context.Context, cfg Config, onReady func(bool)) (*Node, error) {
	cfg.setDefaults()
	id, err := nodeID(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if err := ensureTopics(ctx, cfg.Kafka); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, id: id, onReady: onReady, local: newLocalQueue(forwardsBound * cfg.MaxBatch), takes: takes{restores: map[int32]*changelog.ChainRestore{}, broken: map[int32]bool{}}}
	var closers []func()
	fail := func(err error) (*Node, error) {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		return nil, err
	}
	if n.snaps, err = changelog.OpenSnapshots(cfg.Dir, cfg.Kafka, cfg.Logger, changelog.SnapshotOptions{FS: cfg.SnapshotFS, MemTableBytes: cfg.SnapshotMemTable}); err != nil {
		return nil, err
	}
	closers = append(closers, n.snaps.Close)
	if n.caller, err = calls.New(ctx, cfg.Kafka, id, cfg.Logger); err != nil {
		return fail(err)
	}
	closers = append(closers, n.caller.Close)
	if n.replies, err = newReplySender(cfg.Kafka, cfg.Logger); err != nil {
		return fail(err)
	}
	closers = append(closers, n.replies.close)
	if n.writer, err = kafkalog.NewWriter(cfg.Kafka); err != nil {
		return fail(err)
	}
	closers = append(closers, n.writer.Close)
	n.owner = kafkalog.NewOwner(n.writer, cfg.Kafka, n.snaps.Restate)
	n.fwd = kafkalog.NewForwarder(n.sendForward, forwardResend)
	m, err := kafkalog.JoinChain(cfg.Kafka, n.owner, n.fwd, n.handlers())
	if err != nil {
		return fail(err)
	}
	n.member.Store(m)
	n.leaveGroup = sync.OnceFunc(m.Close)
	closers = append(closers, n.leaveGroup)
	if cfg.Peer != nil {
		if n.peers, err = startPeers(ctx, cfg, id, n); err != nil {
			return fail(err)
		}
	}
	n.caller.SetLocal(n.route)
	n.ledger = ledgercluster.New(n.caller, cfg.Kafka.Partitions)
	n.kv = kvcluster.New(n.caller, int(cfg.Kafka.Partitions))
	n.seats = ticketcluster.New(n.caller, n.ledger, int(cfg.Kafka.Partitions))
	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.done.Add(2)
	go n.own(runCtx)
	go n.tickForwards(runCtx)
	cfg.Logger.Info("cluster: joined", "node", id, "cluster", cfg.Kafka.Group(), "partitions", cfg.Kafka.Partitions)
	return n, nil
}

// startPeers starts the node's peer links.
func startPeers(ctx context.Context, cfg Config, id string, n *Node) (*peer.Peers, error) {
	pc := *cfg.Peer
	pc.Node, pc.Dir, pc.Kafka, pc.Logger = id, cfg.Dir, cfg.Kafka, cfg.Logger
	p, err := peer.Start(ctx, pc, n.caller, n.takePeer)
	if err == nil {
		cfg.Logger.Info("cluster: peer links", "addr", p.Addr())
	}
	return p, err
}

// ID is the node's id, kept in its data directory.
func (n *Node) ID() string { return n.id }

// Ledger is the ledger as the node's clients see it: every call goes to the
// partition owning its account.
func (n *Node) Ledger() *ledgercluster.Ledger { return n.ledger }

// KV is the key-value entries as the node's clients see them.
func (n *Node) KV() *kvcluster.KV { return n.kv }

// Tickets is ticketing as the node's clients see it.
func (n *Node) Tickets() *ticketcluster.Tickets { return n.seats }

// Owned returns the partitions the node owns: those its member writes.
func (n *Node) Owned() []int32 {
	if m := n.member.Load(); m != nil {
		return m.Owned()
	}
	return nil
}

// writes reports whether the node's member writes partition p, so that
// its rounds may take a local command for it.
func (n *Node) writes(p int32) bool {
	m := n.member.Load()
	return m != nil && m.Takes(p)
}

// Ready reports whether the node owns its partitions and restored them.
func (n *Node) Ready() bool { return n.ready.Load() }

// CreateWorld creates @world once the cluster serves; an existing one is
// kept.
func (n *Node) CreateWorld(ctx context.Context) error {
	return n.ledger.CreateWorld(ctx, n.cfg.Currency)
}

// moved is told of a change of the partitions the member writes (a
// take, a failed take, a revoke, a write that did not count). It clears
// readiness before it bumps gen: a build that reads the new gen then sets
// readiness after this, never before it, so a node whose state is current
// cannot be left unready.
func (n *Node) moved() {
	n.setReady(false)
	n.gen.Add(1)
}

// revoked is the member's callback on partitions the group took from it:
// besides moved, it sends the commands queued for them, which no round of
// the node applies now, on to the commands topic for their new owner at
// once, not after the running round and the node's rebuild.
func (n *Node) revoked(_ context.Context, ps []int32) {
	n.moved()
	for _, c := range n.local.takeOf(ps) {
		n.goForward(c)
	}
}

// setReady sets readiness; a node that becomes ready publishes the
// partitions it owns to its peers.
func (n *Node) setReady(r bool) {
	if n.ready.Swap(r) == r {
		return
	}
	if r {
		n.peers.Publish(n.Owned())
	}
	if n.onReady != nil {
		n.onReady(r)
	}
}

// Close leaves the group (the node's partitions move to the others) and
// stops.
func (n *Node) Close() {
	n.setReady(false)
	n.cancel()
	n.done.Wait()
	n.forwards.wait()
	if n.peers != nil {
		n.peers.Close()
	}
	n.leaveGroup()
	n.writer.Close()
	n.replies.close()
	n.caller.Close()
	n.snaps.Close()
}

// nodeID reads the node's id from dir, or makes one and keeps it there:
// stable across restarts, so that a restarted node's inbox is the same.
func nodeID(dir string) (string, error) {
	path := filepath.Join(dir, "node-id")
	b, err := os.ReadFile(path)
	if err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("node: reading its id: %w", err)
	}
	id := uuid.NewString()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("node: keeping its id: %w", err)
	}
	return id, os.Rename(tmp, path)
}

// ensureTopics creates or checks the cluster's topics. Nodes starting
// together race to create them: the losers may find a topic the brokers do
// not serve yet, so they try again for a while.
func ensureTopics(ctx context.Context, c kafkalog.Config) error {
	cl, err := kgo.NewClient(c.Seeds()...)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	defer cl.Close()
	for try := 1; ; try++ {
		err := kafkalog.EnsureTopics(ctx, cl, c)
		if err == nil || errors.Is(err, kafkalog.ErrTopicMismatch) || try == 30 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}
