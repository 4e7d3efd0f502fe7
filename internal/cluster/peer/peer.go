// Package peer carries a cluster's commands from the node that received
// them straight to their partition's owner, and the owner's replies
// straight back, over a link between the two nodes (docs/CLUSTER.md, "The
// peer link"), instead of through the commands topic and the front node's
// inbox. The owner applies such a command as one of its local commands,
// with their rules; whatever the link cannot do goes through Kafka as
// before.
//
// A link is one connection from the front node to the owner over mutual
// TLS with pinned self-signed certificates (cert.go); each message on it
// is a packed batch of commands, or of answers, framed by its length
// (wire.go). Nodes find each
// other through the cluster's nodes topic (directory.go).
package peer

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// Config sets up a node's peer links.
type Config struct {
	// Listen is the address the node takes links on (host:port; port 0
	// picks a free one).
	Listen string
	// Advertise is the address other nodes reach it on; empty: the
	// listener's, with the host's name if it listens on every interface.
	Advertise string
	// MaxInFlight bounds the commands in flight on one link, each way
	// (0: 4096), and MaxInFlightBytes their keys' and values' bytes (0:
	// 64 MiB): over either a front node sends through Kafka, and an owner
	// fails the command at once.
	MaxInFlight      int
	MaxInFlightBytes int
	// MaxConns bounds the connections open at once to the node's peer
	// port (0: 256; a cluster needs one from each other node): one over
	// it is closed as soon as it is accepted.
	MaxConns int
	// Registerer, if set, receives the links' metrics.
	Registerer prometheus.Registerer

	// Set by the node.
	Node   string
	Dir    string
	Kafka  kafkalog.Config
	Logger *slog.Logger
}

// Receiver takes the answers to a front node's calls (calls.Caller).
type Receiver interface {
	Deliver(rid, reply []byte)
	Fail(rid []byte, err error)
}

// Take is the owner's side: it queues a command a peer sent for
// partition, or sends it on through the commands topic, and has it
// answered (Peers.Reply, Fail or Kafka); true. A forward or answers
// (Peers.Forward) it may drop instead, reporting false: the source's
// Forwarder sends them again.
type Take func(partition int32, key, value []byte) bool

// ErrLinkDown fails the calls in flight on a link that broke.
var ErrLinkDown = fmt.Errorf("peer: the link to the partition's owner broke: %w", calls.ErrLost)

// errFailed fails a call its owner failed: its link refused the command,
// or the round applying it ended with its outcome unknown.
var errFailed = fmt.Errorf("peer: the partition's owner refused the command or cannot tell whether it applied it: %w", calls.ErrLost)

// retryAfter is how long a front node sends through Kafka to a peer it
// could not link to or whose link broke, before it tries again.
const retryAfter = time.Second

// maxMessage bounds a message on a link: a command as large as a record
// of the commands topic travels alone in one.
const maxMessage = kafkalog.MaxRecordBytes + 64<<10

// The budget of the peer port, which anyone reaching it can connect to:
// the time a connection has to complete its TLS handshake. Each side
// of a link pings the other when it is silent, so that a peer that
// vanished without closing its connections ends the link (and fails its
// calls) within keepaliveTime and keepaliveTimeout.
const (
	handshakeTimeout = 5 * time.Second
	keepaliveTime    = 10 * time.Second
	keepaliveTimeout = 5 * time.Second
)

// Peers are a node's links: those it opened to other nodes, as a front
// node, and those it takes, as an owner.
type Peers struct {
	cfg   Config
	cert  tls.Certificate
	fp    string
	dir   *directory
	nodes *nodesLog
	recv  Receiver
	take  Take
	ln    net.Listener
	tls   *tls.Config
	met   *metrics
	// served holds the links the node takes, as an owner.
	served served

	mu    sync.Mutex
	links map[string]*link
	// down holds the peers not to try before the time given.
	down map[string]time.Time
	// owed holds the commands taken from peers not answered yet, by
	// request id.
	owed   map[string]owed
	closed bool

	pub publisher
	// linked, if set, is told of each link the node opened (tests).
	linked func(node string)
}

// Start makes or reads the node's certificate, listens for links, starts
// reading the nodes topic and publishes the node's entry.
func Start(ctx context.Context, cfg Config, recv Receiver, take Take) (*Peers, error) {
	dir := newDirectory(cfg.Kafka.Partitions)
	p, err := newPeers(cfg, dir, recv, take)
	if err != nil {
		return nil, err
	}
	if p.nodes, err = openNodesLog(ctx, cfg.Kafka, dir, cfg.Logger); err != nil {
		p.Close()
		return nil, err
	}
	p.pub.start(p)
	p.Publish(nil)
	return p, nil
}

// newPeers starts listening, over the directory dir.
func newPeers(cfg Config, dir *directory, recv Receiver, take Take) (*Peers, error) {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 4096
	}
	if cfg.MaxInFlightBytes <= 0 {
		cfg.MaxInFlightBytes = 64 << 20
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cert, err := loadCert(cfg.Dir, cfg.Node)
	if err != nil {
		return nil, fmt.Errorf("peer: certificate: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("peer: %w", err)
	}
	p := &Peers{
		cfg: cfg, cert: cert, fp: fingerprint(cert.Certificate[0]), dir: dir, recv: recv, take: take, ln: ln,
		pub: publisher{wake: make(chan struct{}, 1)}, met: newMetrics(cfg.Registerer), links: map[string]*link{}, down: map[string]time.Time{}, owed: map[string]owed{},
	}
	if p.cfg.Advertise == "" {
		p.cfg.Advertise = advertised(ln.Addr().(*net.TCPAddr))
	}
	p.tls = serverTLS(cert, dir.known)
	go p.accept(&cappedListener{Listener: ln, max: int64(cfg.MaxConns), refused: p.met.refused})
	return p, nil
}

// advertised is the address a listener on a is reached on: a's, or the
// host's name and a's port if a is on every interface.
func advertised(a *net.TCPAddr) string {
	if a.IP.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			return net.JoinHostPort(h, fmt.Sprint(a.Port))
		}
	}
	return a.String()
}

// Addr is the address other nodes reach the node's links on.
func (p *Peers) Addr() string { return p.cfg.Advertise }

// Publish has the node's entry in the nodes topic list owned as its
// partitions. Entries are written in order by one goroutine; a newer one
// replaces an older not yet written.
func (p *Peers) Publish(owned []int32) {
	if p != nil {
		p.pub.set(entry{Addr: p.cfg.Advertise, FP: p.fp, Owned: owned})
	}
}

// Close stops the links: the calls in flight on those the node opened
// fail.
func (p *Peers) Close() {
	p.mu.Lock()
	p.closed = true
	links := p.links
	p.links = nil
	p.mu.Unlock()
	for _, l := range links {
		if l != nil { // nil: being opened
			l.close(ErrLinkDown)
		}
	}
	p.pub.stop()
	_ = p.ln.Close()
	p.served.stop()
	if p.nodes != nil {
		p.nodes.close()
	}
}

// publisher writes the node's latest entry to the nodes topic.
type publisher struct {
	mu     sync.Mutex
	next   *entry
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *publisher) start(p *Peers) {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			}
			w.mu.Lock()
			e := w.next
			w.next = nil
			w.mu.Unlock()
			if e == nil {
				continue
			}
			if err := p.nodes.publish(ctx, p.cfg.Node, *e); err != nil && ctx.Err() == nil {
				p.cfg.Logger.Warn("cluster: publishing the node's peer entry", "err", err)
				w.retry(ctx, *e)
			}
		}
	}()
}

// set queues e, replacing an entry not yet written.
func (w *publisher) set(e entry) {
	w.mu.Lock()
	w.next = &e
	w.mu.Unlock()
	w.poke()
}

// retry queues e again after a while, unless a newer entry is queued.
func (w *publisher) retry(ctx context.Context, e entry) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(retryAfter):
	}
	w.mu.Lock()
	if w.next == nil {
		w.next = &e
	}
	w.mu.Unlock()
	w.poke()
}

func (w *publisher) poke() {
	select {
	case w.wake <- struct{}{}:
	default: // woken already
	}
}

func (w *publisher) stop() {
	if w.cancel != nil {
		w.cancel()
		<-w.done
	}
}
