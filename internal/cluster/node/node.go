// Package node runs a surge node of a cluster on Apache Kafka
// (docs/CLUSTER.md): it joins the cluster, owns some of its partitions and
// runs the engine's rounds over them, each round's outputs in one Kafka
// transaction, handing each command to its workload by its first byte.
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
	// Currency is the currency of @world when the ledger is first created.
	Currency string
	// MaxBatch bounds the commands a round reads (0: 4096).
	MaxBatch int
	// TransactionTimeout is how long the brokers let a round's transaction
	// stay open before aborting it: a dead owner's last round blocks its
	// partitions' new owner that long at most (0: 5 s).
	TransactionTimeout time.Duration
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
	if c.TransactionTimeout <= 0 {
		c.TransactionTimeout = 5 * time.Second
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
	cfg    Config
	id     string
	member *kafkalog.Member
	caller *calls.Caller
	// peers are the node's links to the others; nil without them.
	peers  *peer.Peers
	ledger *ledgercluster.Ledger
	kv     *kvcluster.KV
	seats  *ticketcluster.Tickets
	snaps  *changelog.Snapshots
	// local holds the commands the node takes for its own partitions
	// until a round takes them (owner_local.go).
	local *localQueue
	// gen counts the changes of the partitions the member owns; built is
	// the gen the owner's state was last built for (owner.go).
	gen, built atomic.Uint64
	ready      atomic.Bool
	onReady    func(bool)
	cancel     context.CancelFunc
	done       sync.WaitGroup
	// forwards runs the appends of commands the node took but does not
	// apply (owner_local.go).
	forwards forwards
}

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
	n := &Node{cfg: cfg, id: id, onReady: onReady, local: newLocalQueue()}
	if n.snaps, err = changelog.OpenSnapshots(cfg.Dir, cfg.Kafka, cfg.Logger); err != nil {
		return nil, err
	}
	if n.caller, err = calls.New(ctx, cfg.Kafka, id, cfg.Logger); err != nil {
		n.snaps.Close()
		return nil, err
	}
	n.member, err = kafkalog.Join(ctx, cfg.Kafka, id, kafkalog.Handlers{
		Assigned: n.moved, Revoked: n.revoked,
	}, kgo.TransactionTimeout(cfg.TransactionTimeout))
	if err != nil {
		n.caller.Close()
		n.snaps.Close()
		return nil, err
	}
	if cfg.Peer != nil {
		if n.peers, err = startPeers(ctx, cfg, id, n); err != nil {
			n.member.Close()
			n.caller.Close()
			n.snaps.Close()
			return nil, err
		}
	}
	n.caller.SetLocal(n.route)
	n.ledger = ledgercluster.New(n.caller, cfg.Kafka.Partitions)
	n.kv = kvcluster.New(n.caller, int(cfg.Kafka.Partitions))
	n.seats = ticketcluster.New(n.caller, n.ledger, int(cfg.Kafka.Partitions))
	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.done.Add(1)
	go n.own(runCtx)
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

// Owned returns the partitions the node owns.
func (n *Node) Owned() []int32 { return n.member.Owned() }

// Ready reports whether the node owns its partitions and restored them.
func (n *Node) Ready() bool { return n.ready.Load() }

// CreateWorld creates @world once the cluster serves; an existing one is
// kept.
func (n *Node) CreateWorld(ctx context.Context) error {
	return n.ledger.CreateWorld(ctx, n.cfg.Currency)
}

// moved is the group's callback on a change of the owned partitions. It
// clears readiness before it bumps gen: a build that reads the new gen
// then sets readiness after this, never before it, so a node whose state
// is current cannot be left unready.
func (n *Node) moved(context.Context, []int32) {
	n.setReady(false)
	n.gen.Add(1)
}

// revoked is the group's callback on partitions the member gave up or
// lost: besides moved, it sends the commands queued for them, which no
// round of the node applies now, on to the commands topic for their new
// owner at once, not after the running round and the node's rebuild.
func (n *Node) revoked(ctx context.Context, ps []int32) {
	n.moved(ctx, ps)
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
		n.peers.Publish(n.member.Owned())
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
	n.member.Close()
	n.caller.Close()
	n.snaps.Close()
}

// nodeID reads the node's id from dir, or makes one and keeps it there:
// stable across restarts, so that a restarted node fences its former
// incarnation's transactions.
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
