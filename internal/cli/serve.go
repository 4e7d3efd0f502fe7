package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/crypto/bcrypt"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/browser"
	"github.com/surge-dev/surge/internal/dashboard"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/kv"
	"github.com/surge-dev/surge/internal/kv/kvapi"
	"github.com/surge-dev/surge/internal/kv/kvstore"
	"github.com/surge-dev/surge/internal/ledger/ledgerapi"
	"github.com/surge-dev/surge/internal/lifecycle"
	"github.com/surge-dev/surge/internal/routes"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/telemetry"
	"github.com/surge-dev/surge/internal/tickets/ticketapi"
	"github.com/surge-dev/surge/internal/tickets/ticketengine"
	"github.com/surge-dev/surge/internal/tickets/ticketstore"
	"github.com/surge-dev/surge/internal/wallet/auth"
	"github.com/surge-dev/surge/internal/wallet/rpc"
	"github.com/surge-dev/surge/internal/wallet/vmr"
	"github.com/surge-dev/surge/internal/workloads"
)

type serveConfig struct {
	addr     string
	data     string
	apiKey   string
	currency string
	shards   int
	queue    int
	maxBatch int
	sweep    int
	noSync   bool
	walLoss  bool
	recProf  string
	memtable int
	gcPct    int
	kvValue  int
	memLimit int
	logLevel slog.Level
	logFmt   telemetry.LogFormat
	tracing  telemetry.TracingConfig
	wallet   walletConfig
	limits   front.Limits
	// requestsGiven is whether --max-inflight-requests was given: if not,
	// a cluster node takes its own default (clusterMaxRequests).
	requestsGiven bool
	// trustedProxies is --trusted-proxies, parsed into limits.
	trustedProxies []string
	bodyMB         int
	headerTO       time.Duration
	http2Server    string
	outcomes       outcomeConfig
	cors           []string
	cluster        clusterConfig
	tls            tlsConfig
}

// outcomeConfig holds the flags that bound the settled reservations kept
// for readers.
type outcomeConfig struct {
	retention time.Duration
	memoryMB  int
}

// walletConfig holds the flags of the wallet, friends and chat RPCs.
type walletConfig struct {
	tokenSecret string
	tokenTTL    time.Duration
	bcryptCost  int
	minAmount   int64
}

func newServeCommand() *cobra.Command {
	c := serveConfig{logFmt: telemetry.LogText}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the surge server",
		Long: `Run the surge server: every workload on one port, storage embedded under --data;
with --kafka, as a node of a cluster on Kafka (docs/CLUSTER.md).

Listening on a loopback address needs no key. Listening on any other address
requires --api-key, which every /v1 and /v0 request must then carry as
"Authorization: Bearer <key>", and TLS: --tls-cert and --tls-key, or
--plaintext-behind-proxy where a TLS-terminating proxy in front of surge is
what clients reach.

Every acknowledged write is on disk (fsync) before its reply; --no-sync trades
that away, store-wide, for latency.

The wallet, friends and chat services (gRPC, gRPC-Web and Connect JSON,
with reflection and grpc.health.v1) share the port; their users sign in
with their own tokens, signed with --token-secret or a secret generated on
first start and kept under --data.

The live dashboard is at / (http://127.0.0.1:8080/ by default). It and
/debug/pprof/ are for operators: loopback clients, or others with the API key
(a browser asks for it: any user name, the key as password). /metrics,
/healthz and /readyz are open. docs/OPERATIONS.md says how to run, scrape,
trace and read surge.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.requestsGiven = cmd.Flags().Changed("max-inflight-requests")
			return serve(cmd.Context(), c, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	f.StringVar(&c.data, "data", "./data", "directory of the embedded storage (created if missing)")
	f.StringVar(&c.apiKey, "api-key", "", "bearer key required on /v1 routes; mandatory off loopback")
	f.StringVar(&c.currency, "currency", "USD", "currency of @world when the ledger is first created")
	f.IntVar(&c.shards, "shards", 0, "number of shards (0: one per CPU)")
	f.IntVar(&c.queue, "queue", 65536, "commands a shard may queue before requests are refused with 503")
	f.IntVar(&c.maxBatch, "max-batch", 4096, "most commands a shard applies per storage commit")
	f.IntVar(&c.sweep, "sweep-entries", 0, "ledger history entries written while a sweep moves every account's recent entries to storage (0: 1048576); bounds the history journal a restart replays, and the recent entries held in memory, to about twice this")
	f.BoolVar(&c.noSync, "no-sync", false, "acknowledge writes (ledger and key-value) before fsync: faster, but a crash loses the latest acknowledged writes")
	f.BoolVar(&c.walLoss, "accept-wal-loss", false, "start even though a WAL is damaged with valid records after the damage, dropping everything in it from the damage on (without it, surge refuses to start and names the file and offset)")
	f.StringVar(&c.recProf, "recovery-profile", "", "write a CPU profile of recovery, from start until ready, to this file (for go tool pprof)")
	f.IntVar(&c.memtable, "memtable-mb", 0, "storage memtable size in MiB (0: default); with --kafka, the local snapshot's")
	f.IntVar(&c.gcPct, "gc-percent", 400, "Go GC target (GOGC) unless GOGC is set: the heap is mostly long-lived accounts, which Go's default of 100 marks again and again")
	f.IntVar(&c.kvValue, "kv-max-value", kv.DefaultMaxValueBytes, fmt.Sprintf("largest value a key-value PUT may store, in bytes (at most %d; in cluster mode %d, what a Kafka record carries, which is also the default there); larger ones get 413", kv.MaxValueLimit, kvstore.MaxClusterValueBytes))
	f.IntVar(&c.memLimit, "memory-limit-mb", 768, "soft limit of the Go heap in MiB (GOMEMLIMIT) unless GOMEMLIMIT is set; 0: none. With --gc-percent 400 the heap may grow to 5x what is live; near this limit the GC runs more often instead, which bounds a flash sale's RSS")
	addLimitFlags(f, &c)
	addClusterFlags(f, &c.cluster)
	addTLSFlags(f, &c.tls)
	f.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "log level: debug (adds a line per request), info, warn or error")
	f.Var(&c.logFmt, "log-format", "log format: text (key=value) or json")
	f.StringVar(&c.tracing.Endpoint, "otlp-endpoint", "", "OpenTelemetry collector to send traces to over OTLP/HTTP, e.g. http://localhost:4318; empty: no tracing")
	f.Float64Var(&c.tracing.SampleRatio, "trace-sample", 0.01, "share of requests traced (0 to 1) when --otlp-endpoint is set; a client's sampled traceparent is always followed")
	f.StringVar(&c.wallet.tokenSecret, "token-secret", "", "secret (32+ bytes) that signs wallet login tokens; empty: one generated on first start and kept in --data")
	f.DurationVar(&c.wallet.tokenTTL, "token-ttl", 24*time.Hour, "how long a wallet login token stays valid")
	f.IntVar(&c.wallet.bcryptCost, "bcrypt-cost", bcrypt.DefaultCost, "bcrypt cost of wallet password hashes (4-31; each step doubles the time of a login)")
	f.StringSliceVar(&c.cors, "cors-origins", nil, "origins (scheme://host[:port], comma-separated, or \"*\") whose web pages may call surge's JSON, Connect and gRPC-Web routes; none by default")
	f.Int64Var(&c.wallet.minAmount, "wallet-min-amount", 1, "smallest amount a wallet Transfer accepts, in minor units")
	f.DurationVar(&c.outcomes.retention, "outcome-retention", ticketengine.DefaultOutcomeRetention, "how long a settled reservation (failed, cancelled, expired) stays in memory for readers; then a failed one is forgotten (404), the others read from disk")
	f.IntVar(&c.outcomes.memoryMB, "outcome-memory-mb", ticketengine.DefaultOutcomeMemoryBytes>>20, "memory (MiB) the settled reservations kept for readers may take; beyond it the oldest leave before --outcome-retention")
	return cmd
}

func serve(ctx context.Context, c serveConfig, out io.Writer) error {
	cors, err := checkServeConfig(&c)
	if err != nil {
		return err
	}
	if c.cluster.kafka != "" {
		return serveCluster(ctx, c, out)
	}
	logger := telemetry.NewLogger(os.Stderr, c.logLevel, c.logFmt)
	c.tracing.Version = buildVersion()
	tracing, err := telemetry.StartTracing(ctx, c.tracing)
	if err != nil {
		return err
	}
	defer shutdownTracing(tracing, logger)
	dir, err := filepath.Abs(c.data)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	// --recovery-profile: what a restart spends until it is ready.
	stopProfile, err := bench.StartCPUProfile(c.recProf)
	if err != nil {
		return fmt.Errorf("--recovery-profile: %w", err)
	}
	reg := prometheus.NewRegistry()
	telemetry.RegisterRuntime(reg)
	faults := lifecycle.NewStorageFaults(reg, logger)
	ln, tc, err := openPort(c, out, logger)
	if err != nil {
		return err
	}
	recovering, err := lifecycle.ServeStarting(ln, tc, logger)
	if err != nil {
		return err
	}
	p, err := openProcess(ctx, c, dir, reg, faults, tracing.Provider() != nil, logger)
	if err != nil {
		return err
	}
	defer p.close()
	srv := p.front(c, cors, tracing.Provider(), reg, logger)
	if err := recovering.Stop(logger); err != nil {
		return err
	}
	if err := stopProfile(); err != nil {
		return fmt.Errorf("--recovery-profile: %w", err)
	}
	fmt.Fprintf(out, "surge: data in %s (%d shards)\n", dir, p.eng.Shards())
	return p.run(ctx, srv, ln, tc, dir, faults, logger)
}

// checkServeConfig refuses flags that cannot work together and applies
// the GC settings the environment does not set. It returns the CORS
// policy of --cors-origins.
func checkServeConfig(c *serveConfig) (*browser.CORS, error) {
	if err := c.tls.check(); err != nil {
		return nil, err
	}
	if err := checkExposure(c.addr, c.apiKey, c.tls); err != nil {
		return nil, err
	}
	if !ledgerapi.ValidCurrency(c.currency) {
		return nil, fmt.Errorf("--currency %q: want 1-12 characters of A-Z and 0-9", c.currency)
	}
	if err := kv.CheckMaxValue(c.kvValue); err != nil {
		return nil, fmt.Errorf("--kv-max-value: %w", err)
	}
	if err := checkLimits(c); err != nil {
		return nil, err
	}
	cors, err := browser.NewCORS(c.cors)
	if err != nil {
		return nil, fmt.Errorf("--cors-origins: %w", err)
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(c.gcPct)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set && c.memLimit > 0 {
		debug.SetMemoryLimit(int64(c.memLimit) << 20)
	}
	return cors, nil
}

// process is a single process's workloads on their stores, with the
// transports that serve them.
type process struct {
	eng       *engine.Engine
	kvdb      *store.Store
	feed      *dashboard.LedgerFeed
	sales     dashboard.TicketEvents
	api       *ledgerapi.API
	tickets   *ticketapi.API
	kvs       *kvapi.Handler
	wallet    *rpc.Service
	face      *vmr.Face
	dash      *dashboard.Dashboard
	admission *front.Admission
	reg       *prometheus.Registry
	// ready is what ticketing's routes are told; the ledger's API keeps
	// its own (SetReady, SetUnready).
	ready atomic.Bool
}

// openProcess opens the workloads on dir, recovering their state, and
// their transports; traced wraps the ledger and ticketing in spans.
func openProcess(ctx context.Context, c serveConfig, dir string, reg *prometheus.Registry, faults *lifecycle.StorageFaults, traced bool, logger *slog.Logger) (*process, error) {
	wl, err := workloads.Open(ctx, workloads.Config{Currency: c.currency, SweepEntries: c.sweep, Engine: engine.Config{
		Dir: dir, Shards: c.shards, QueueCapacity: c.queue, MaxBatch: c.maxBatch,
		NoSync: c.noSync, MemTableBytes: uint64(c.memtable) << 20, Registerer: reg, Logger: logger,
		OnStorageFault: faults.Hook("ledger"), AcceptWALLoss: c.walLoss,
	}, Tickets: ticketengine.Config{
		OutcomeRetention: c.outcomes.retention, OutcomeMemoryBytes: int64(c.outcomes.memoryMB) << 20,
	}})
	if err != nil {
		return nil, err
	}
	p := &process{eng: wl.Engine, feed: dashboard.NewLedgerFeed(wl.Ledger), sales: dashboard.TicketEvents{Source: wl.Tickets}}
	var ledger ledgerapi.Ledger = p.feed
	var box ticketapi.Box = wl.Tickets
	if traced {
		ledger, box = ledgerapi.Traced(ledger), ticketapi.Traced(box)
	}
	p.api = ledgerapi.New(ledger, ledgerapi.Options{APIKey: c.apiKey, Registry: reg, Logger: logger})
	p.reg = reg
	registerReady(reg, p.api.Ready)
	if p.kvdb, err = openKV(dir, c, faults.Hook("kv")); err != nil {
		p.close()
		return nil, err
	}
	p.kvs = kvapi.New(kvstore.New(p.kvdb, reg), kvapi.Options{
		MaxValueBytes: c.kvValue, Authorize: p.api.AuthorizedHeader, Registry: reg, Logger: logger,
	})
	holdSecret, err := ticketstore.Store{Store: wl.Engine.Store()}.HoldSecret(auth.NewSecret)
	if err != nil {
		p.close()
		return nil, fmt.Errorf("reservation hold secret: %w", err)
	}
	p.tickets = ticketapi.New(box, ticketapi.Options{APIKey: c.apiKey, HoldSecret: holdSecret, Ready: p.ready.Load, Registry: reg, Logger: logger})
	if p.wallet, err = newWallet(ctx, p.eng, ledger, c, reg, logger); err != nil {
		p.close()
		return nil, err
	}
	p.face = vmr.New(p.wallet.Local(), vmr.Options{Origins: c.cors, Logger: logger})
	// One budget for the front door and the gRPC server behind it.
	p.admission = front.NewAdmission(c.limits, reg)
	return p, nil
}

// close closes what openProcess opened.
func (p *process) close() {
	if p.dash != nil {
		p.dash.Close()
	}
	if p.kvdb != nil {
		_ = p.kvdb.Close()
	}
	_ = p.eng.Close()
}

// front builds the dashboard and the front door over every transport.
func (p *process) front(c serveConfig, cors *browser.CORS, tp trace.TracerProvider, reg *prometheus.Registry, logger *slog.Logger) *front.Server {
	meter := telemetry.NewMeter(telemetry.Workloads...)
	p.dash = dashboard.New(dashboard.Options{Meter: meter, Logger: logger})
	p.dash.Register(dashboard.TransfersPanel("ledger-transfers", "Recent transfers", p.feed))
	p.dash.Register(dashboard.EventsPanel("ticket-sales", "Ticket sales", p.sales))
	p.dash.Register(dashboard.LimitsPanel("front-limits", "Limits in force", limitUses(p.admission)))
	p.dash.Start()
	mw := telemetry.NewMiddleware(nil, telemetry.MiddlewareOptions{
		Meter: meter, Logger: logger, Registerer: reg, TracerProvider: tp,
	})
	grpcSrv := p.wallet.GRPCServer(append(mw.GRPC(), p.admission.GRPCOptions(idleTimeout)...)...)
	p.face.RegisterGRPC(grpcSrv)
	t := routes.Transports{Ledger: p.api, Tickets: p.tickets, KV: p.kvs, Wallet: p.wallet, VMR: p.face, Dashboard: p.dash, APIKey: c.apiKey}
	srv := routes.Front(t, front.Options{
		GRPC:          grpcSrv,
		Middleware:    mw.Wrap,
		Wrap:          mw.Fast,
		OnNetRequest:  telemetry.HandOver,
		HeaderTimeout: c.headerTO,
		IdleTimeout:   idleTimeout,
		HTTP2:         front.HTTP2Server(c.http2Server),
		Admission:     p.admission,
		Registerer:    reg,
		Logger:        logger,
		CORS:          cors,
	})
	// Dashboard streams never end on their own; Shutdown would wait for them.
	srv.RegisterOnShutdown(p.dash.Close)
	return srv
}

// run serves ln (with TLS tc, if not nil) until ctx ends, then shuts
// down; a storage fault's restart in place (ResumeWhenWritable) ends it
// too.
func (p *process) run(ctx context.Context, srv *front.Server, ln net.Listener, tc *tls.Config, dir string, faults *lifecycle.StorageFaults, logger *slog.Logger) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(secured(ln, tc)) }()
	p.api.SetReady(true)
	p.ready.Store(true)
	unready := func(reason string) {
		p.api.SetUnready(reason)
		p.ready.Store(false)
	}
	faults.ReportTo(unready)
	defer lifecycle.CheckTables(ctx, logger, []lifecycle.NamedStore{{Name: "ledger", Store: p.eng.Store()}, {Name: "kv", Store: p.kvdb}}, unready, p.reg)()
	restart := make(chan error, 1)
	go func() {
		restart <- faults.ResumeWhenWritable(ctx, dir, ln, func() { lifecycle.StopServing(srv, logger) })
	}()
	select {
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) { // stopped for a restart in place
			err = <-restart
		}
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	p.api.SetReady(false)
	p.ready.Store(false)
	if err := shutdown(srv); err != nil {
		return err
	}
	return p.eng.Close()
}

// shutdownGrace is how long a stopping server waits for the requests in
// progress.
const shutdownGrace = 15 * time.Second

// shutdown stops srv gracefully, waiting shutdownGrace at most.
func shutdown(srv *front.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// shutdownTracing sends the spans still buffered, waiting a few seconds
// at most for a collector that is gone.
func shutdownTracing(t *telemetry.Tracing, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("flushing traces", "err", err)
	}
}

// buildVersion is the module version the binary was built from, as
// service.version in traces.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "unknown"
}

// newWallet opens the wallet, friends and chat RPCs on ledger (eng's, as the
// transports see it) and eng's storage.
func newWallet(ctx context.Context, eng *engine.Engine, ledger rpc.Ledger, c serveConfig, reg prometheus.Registerer, logger *slog.Logger) (*rpc.Service, error) {
	var secret []byte
	if c.wallet.tokenSecret != "" {
		secret = []byte(c.wallet.tokenSecret)
	}
	return rpc.New(ctx, rpc.Config{
		Ledger: ledger, Store: eng.Store(), Currency: c.currency,
		TokenSecret: secret, TokenTTL: c.wallet.tokenTTL, BcryptCost: c.wallet.bcryptCost,
		MinAmount: c.wallet.minAmount, LoginLimit: auth.DefaultLimit,
		Registerer: reg, Logger: logger,
	})
}

// checkExposure refuses to serve beyond loopback without an API key, or
// in plaintext unless a TLS-terminating proxy is said to be in front.
func checkExposure(addr, apiKey string, t tlsConfig) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	if apiKey == "" {
		return fmt.Errorf("refusing to listen on %s without --api-key: off loopback, anyone could move money", addr)
	}
	if !t.enabled() && !t.plaintextBehindProxy {
		return fmt.Errorf("refusing to listen on %s in plaintext: off loopback the API key and every request would cross the network readable. "+
			"Serve TLS with --tls-cert and --tls-key, or, if clients reach surge through a TLS-terminating proxy, say so with --plaintext-behind-proxy", addr)
	}
	return nil
}

// openKV opens the key-value entries' own store, in the kv directory under
// the data directory.
func openKV(dir string, c serveConfig, onFault func(*store.Fault)) (*store.Store, error) {
	return kvstore.Open(filepath.Join(dir, "kv"), store.Options{
		NoSync: c.noSync, MemTableBytes: uint64(c.memtable) << 20, OnFault: onFault, AcceptWALLoss: c.walLoss,
	})
}
