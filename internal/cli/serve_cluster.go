package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/cluster/node"
	"github.com/surge-dev/surge/internal/cluster/peer"
	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/kv"
	"github.com/surge-dev/surge/internal/kv/kvapi"
	"github.com/surge-dev/surge/internal/kv/kvstore"
	"github.com/surge-dev/surge/internal/ledger/ledgerapi"
	"github.com/surge-dev/surge/internal/routes"
	"github.com/surge-dev/surge/internal/telemetry"
	"github.com/surge-dev/surge/internal/tickets/ticketapi"
	"github.com/surge-dev/surge/internal/tickets/ticketcluster"
	"github.com/surge-dev/surge/internal/wallet/auth"
)

// clusterConfig holds the flags of cluster mode (docs/CLUSTER.md).
type clusterConfig struct {
	kafka      string
	name       string
	partitions int
	session    time.Duration
	security   kafkaSecurity
	peer       bool
	peerAddr   string
	peerAdv    string
}

func addClusterFlags(f *pflag.FlagSet, c *clusterConfig) {
	f.StringVar(&c.kafka, "kafka", "", "Kafka brokers (host:port,...) to run as a node of a cluster on; empty: one process on embedded storage")
	f.StringVar(&c.name, "cluster", kafkalog.DefaultCluster, "with --kafka: the cluster's name, which names its topics and consumer group")
	f.IntVar(&c.partitions, "partitions", 6, "with --kafka: partitions (shards) of the cluster's topics, used when they are created and checked against them afterwards")
	f.DurationVar(&c.session, "session-timeout", 6*time.Second, "with --kafka: how long a silent node keeps its partitions before the others take them (at least the brokers' group.min.session.timeout.ms)")
	f.BoolVar(&c.peer, "peer", true, "with --kafka: send commands for other nodes' partitions straight to them over peer links (mutual TLS), and take theirs; --peer=false: every such command goes through Kafka (docs/CLUSTER.md, \"The peer link\")")
	f.StringVar(&c.peerAddr, "peer-addr", "", "with --kafka: address the node takes peer links on (host:port); empty: the host of --addr, a free port")
	f.StringVar(&c.peerAdv, "peer-advertise", "", "with --kafka: address other nodes reach the node's peer links on, as published in the cluster's nodes topic; empty: the --peer-addr listener's")
	addKafkaSecurityFlags(f, &c.security)
}

// peerConfig is the peer links' configuration the flags give (nil: off);
// addr is --addr.
func (c clusterConfig) peerConfig(addr string, reg prometheus.Registerer) (*peer.Config, error) {
	if !c.peer {
		return nil, nil
	}
	listen := c.peerAddr
	if listen == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("--addr %q: %w", addr, err)
		}
		listen = net.JoinHostPort(host, "0")
	}
	return &peer.Config{Listen: listen, Advertise: c.peerAdv, Registerer: reg}, nil
}

// kafkaConfig is the Kafka configuration the flags give, its security
// checked against the brokers.
func (c clusterConfig) kafkaConfig(ctx context.Context) (kafkalog.Config, error) {
	kc := kafkalog.Config{
		Brokers: strings.Split(c.kafka, ","), Cluster: c.name,
		Partitions: int32(c.partitions), SessionTimeout: c.session,
	}
	err := c.security.secure(ctx, &kc)
	return kc, err
}

// serveCluster runs surge as a node of a cluster on Kafka: the ledger's,
// ticketing's, key-value and the wallet's routes answer on every node.
func serveCluster(ctx context.Context, c serveConfig, out io.Writer) error {
	logger := telemetry.NewLogger(os.Stderr, c.logLevel, c.logFmt)
	kvValue, err := clusterKVValue(c.kvValue, logger)
	if err != nil {
		return err
	}
	c.kvValue = kvValue
	c.limits.MaxRequests = clusterMaxRequests(c.limits.MaxRequests, c.requestsGiven)
	dir, err := filepath.Abs(c.data)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	reg := prometheus.NewRegistry()
	telemetry.RegisterRuntime(reg)
	kc, err := c.cluster.kafkaConfig(ctx)
	if err != nil {
		return err
	}
	kc.Meter = kafkalog.NewMeter(reg)
	ln, tc, err := openPort(c, out, logger)
	if err != nil {
		return err
	}
	pc, err := c.cluster.peerConfig(c.addr, reg)
	if err != nil {
		return err
	}
	var api *ledgerapi.API
	n, err := node.Start(ctx, node.Config{
		Kafka: kc, Peer: pc,
		Dir: dir, Currency: c.currency, MaxBatch: c.maxBatch, Logger: logger,
		SnapshotMemTable: uint64(c.memtable) << 20,
	}, func(ready bool) {
		if api != nil {
			api.SetReady(ready)
		}
	})
	if err != nil {
		return err
	}
	defer n.Close()
	api = ledgerapi.New(n.Ledger(), ledgerapi.Options{APIKey: c.apiKey, Registry: reg, Logger: logger})
	api.SetReady(n.Ready())
	registerReady(reg, api.Ready)
	registerPartitions(reg, n, c.cluster.partitions)
	// Every node signs hold tokens with the cluster's secret, so that a
	// token from one node cancels on any.
	holdSecret, err := clusterHoldSecret(ctx, n.Tickets(), logger)
	if err != nil {
		return err
	}
	n.Tickets().Register(reg)
	tix := ticketapi.New(n.Tickets(), ticketapi.Options{APIKey: c.apiKey, HoldSecret: holdSecret, Ready: n.Ready, Registry: reg, Logger: logger})
	c.data = dir
	wallet, err := openClusterWallet(ctx, c, kc, n, holdSecret, reg, logger)
	if err != nil {
		return err
	}
	defer wallet.close()
	kvs := kvapi.New(n.KV(), kvapi.Options{MaxValueBytes: c.kvValue, Authorize: api.AuthorizedHeader, Registry: reg, Logger: logger})
	srv := clusterFront(c, routes.Transports{Ledger: api, Tickets: tix, KV: kvs, Wallet: wallet.svc, VMR: wallet.face, APIKey: c.apiKey}, reg, logger)
	fmt.Fprintf(out, "surge: node %s of cluster %s on %s (%d partitions)\n", n.ID(), c.cluster.name, c.cluster.kafka, c.cluster.partitions)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(secured(ln, tc)) }()
	go worldOnce(ctx, n, logger)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	api.SetReady(false)
	return shutdown(srv)
}

// clusterFront is a node's front door: the route table of a single
// process but the dashboard, and the wallet's gRPC.
func clusterFront(c serveConfig, t routes.Transports, reg *prometheus.Registry, logger *slog.Logger) *front.Server {
	grpcSrv := t.Wallet.GRPCServer()
	t.VMR.RegisterGRPC(grpcSrv)
	return routes.Front(t, front.Options{
		Limits: c.limits, GRPC: grpcSrv,
		HeaderTimeout: c.headerTO, IdleTimeout: idleTimeout, HTTP2: front.HTTP2Server(c.http2Server),
		Registerer: reg, Logger: logger,
	})
}

// clusterKVValue is --kv-max-value in cluster mode, where a value travels
// in one Kafka record: the default is lowered to what a record carries, and
// a larger value set by hand refused.
func clusterKVValue(limit int, logger *slog.Logger) (int, error) {
	switch {
	case limit <= kvstore.MaxClusterValueBytes:
		return limit, nil
	case limit == kv.DefaultMaxValueBytes:
		logger.Info("cluster: key-value values limited to what a Kafka record carries", "kv_max_value", kvstore.MaxClusterValueBytes)
		return kvstore.MaxClusterValueBytes, nil
	}
	return 0, fmt.Errorf("--kv-max-value %d: in cluster mode a value travels in one Kafka record, so at most %d bytes", limit, kvstore.MaxClusterValueBytes)
}

// clusterRequestsPerCPU is a node's default bound on requests in progress
// for each CPU. A request holds its place until its command's round has
// committed and its reply come back through Kafka, far longer than an
// engine round of a single process, so a node needs more places than a
// single process for the same rate (Little's law), else it refuses
// requests while its CPUs still have room (docs/BENCHMARKS.md, "A node's
// bound on requests in progress").
const clusterRequestsPerCPU = 256

// clusterMaxRequests is --max-inflight-requests in cluster mode: limit
// if it was given, else clusterRequestsPerCPU for each CPU.
func clusterMaxRequests(limit int64, given bool) int64 {
	if given {
		return limit
	}
	return clusterRequestsPerCPU * int64(runtime.GOMAXPROCS(0))
}

// worldOnce creates @world, retrying until the cluster answers.
func worldOnce(ctx context.Context, n *node.Node, logger interface{ Warn(string, ...any) }) {
	for ctx.Err() == nil {
		err := n.CreateWorld(ctx)
		if err == nil {
			return
		}
		logger.Warn("cluster: creating @world", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// clusterHoldSecret proposes a new hold secret to the cluster and returns
// the one it keeps, retrying until the cluster answers.
func clusterHoldSecret(ctx context.Context, t *ticketcluster.Tickets, logger interface{ Warn(string, ...any) }) ([]byte, error) {
	proposed, err := auth.NewSecret()
	if err != nil {
		return nil, err
	}
	for {
		secret, err := t.HoldSecret(ctx, proposed)
		if err == nil {
			return secret, nil
		}
		logger.Warn("cluster: reading the hold secret", "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
