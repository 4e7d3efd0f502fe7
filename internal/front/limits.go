package front

import (
	"context"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Limits bound what clients can make the server hold before a handler
// has decided anything: connections, bytes of request bodies, HTTP/2
// streams, and the time each may take. docs/OPERATIONS.md says what a
// client sees at each and how to size them. A zero field takes the
// default of DefaultLimits.
type Limits struct {
	// MaxConns bounds the connections open at once. Past it a new
	// connection is answered 503 and closed as it is accepted, before
	// anything of it is read.
	MaxConns int
	// BodyBytes bounds the bytes of request bodies the server holds at
	// once. A body is read only once its route and its key admit it, and
	// is charged as it arrives; a chunk the budget cannot take is answered
	// 503 overloaded, with Retry-After, and its connection closed.
	BodyBytes int64
	// MaxWork bounds the work in progress: each request in a handler
	// counts one unit and one more per WorkUnitBytes of its body, up to
	// MaxWork (so that the largest body is taken when nothing else runs).
	// Past it a request is answered 503 overloaded, with Retry-After, at
	// once, rather than queued behind the others.
	MaxWork int64
	// MaxRequests bounds the requests in progress, each counted once
	// whatever its body, from the moment it takes its work until its
	// handler returns. MaxWork weighs bodies for memory's sake; this
	// bound is the one that turns overload into refusals, since it sits
	// where requests only queue for the engine: past it a request is
	// answered 503 overloaded, with Retry-After, at once. A request that
	// waits for an event (a long-poll, a stream, a WebSocket) parks and
	// holds no place while it waits (park.go). Negative means no bound;
	// zero, the default: requestsPerCPU for each CPU the process may
	// use, about what the engine keeps busy with one-request-per-
	// connection clients before requests only wait.
	MaxRequests int64
	// MaxStreams bounds the concurrent streams of one HTTP/2 connection,
	// gRPC's included.
	MaxStreams uint32
	// BodyTimeout bounds reading one request's body on the net/http
	// path (fasthttp's is within HeaderTimeout, which covers the whole
	// request).
	BodyTimeout time.Duration
	// MinBodyRate is the slowest, in bytes a second, a body may arrive
	// once bodyGrace is over; a slower one is cut with 408 request_timeout and
	// its connection closed.
	MinBodyRate int64
	// MaxConnsPerClient and MaxWorkPerClient bound what one client holds
	// of MaxConns and MaxWork (see clients.go); zero means a quarter of
	// MaxConns and half of MaxWork, which leaves one client room for
	// several batches of 8,190 transfers (each some 5,000 units) at once. TrustedProxies are the proxies whose X-Forwarded-For names
	// the client, and whose own connections are not capped.
	MaxConnsPerClient int
	MaxWorkPerClient  int64
	TrustedProxies    []netip.Prefix
}

// DefaultLimits are the limits surge serve starts with.
var DefaultLimits = Limits{MaxConns: 10000, MaxRequests: requestsPerCPU * int64(runtime.GOMAXPROCS(0)), BodyBytes: 64 << 20, MaxWork: 65536, MaxStreams: 250, BodyTimeout: 30 * time.Second, MinBodyRate: 8 << 10}

// requestsPerCPU is the default bound on requests in progress for each
// CPU: enough for the engine's batches to fill at full throughput, few
// enough that a request admitted under overload is served in about the
// time it takes at capacity. The requests in progress are woken together
// as a round of the engine ends, and a request that arrives meanwhile,
// a refusal too, waits for them to run first: the fewer they are, the
// sooner a refusal goes out.
const requestsPerCPU = 64

// WorkUnitBytes is how many bytes of a request's body count as one unit of
// work (Limits.MaxWork): about one transfer's JSON, so that a batch of
// 8,190 transfers weighs what as many single transfers do.
const WorkUnitBytes = 128

// workOf is the work of a request whose body holds n bytes, at most the
// whole budget.
func (g *guard) workOf(n int64) int64 { return min(1+n/WorkUnitBytes, g.work.limit) }

// hold is what an admitted request holds until its handler returns: bytes
// of body, work, and of its client's share of work.
type hold struct {
	body, work, clientWork int64
	request                bool // counted against MaxRequests
	client                 netip.Addr
	cut                    bool // the body was cut at its limit: the connection must close
}

// withDefaults fills l's zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultLimits.MaxConns
	}
	if l.BodyBytes <= 0 {
		l.BodyBytes = DefaultLimits.BodyBytes
	}
	if l.MaxWork <= 0 {
		l.MaxWork = DefaultLimits.MaxWork
	}
	if l.MaxRequests == 0 {
		l.MaxRequests = DefaultLimits.MaxRequests
	}
	if l.MaxStreams == 0 {
		l.MaxStreams = DefaultLimits.MaxStreams
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultLimits.BodyTimeout
	}
	if l.MinBodyRate <= 0 {
		l.MinBodyRate = DefaultLimits.MinBodyRate
	}
	if l.MaxConnsPerClient <= 0 {
		l.MaxConnsPerClient = max(l.MaxConns/4, 1)
	}
	if l.MaxWorkPerClient <= 0 {
		l.MaxWorkPerClient = max(l.MaxWork/2, 1)
	}
	return l
}

// Reasons a request or connection is refused, the label of
// surge_front_rejected_total.
const (
	reasonConns        = "max_conns"
	reasonBodyBudget   = "body_budget"
	reasonBodyTooLarge = "body_too_large"
	reasonUnauthorized = "unauthorized"
	reasonFraming      = "framing"
	reasonBodyRead     = "body_read"
	reasonRapidReset   = "rapid_reset"
	reasonFlowControl  = "flow_control"
	reasonWork         = "overloaded"
	reasonRequests     = "max_requests"
	reasonSlow         = "slow_request"
	reasonMalformed    = "malformed"
	reasonClientConns  = "client_conns"
	reasonClientWork   = "client_overloaded"
)

// budget is a count held against a limit; taking never waits.
type budget struct {
	limit int64
	used  atomic.Int64
}

// take holds n if the limit allows it. The count never passes the limit,
// not even for a refused take: a place given back while one is refused
// sees the room it leaves, and wakes the HTTP/2 gate's parked readers
// (h2gate.roomMayCome).
func (b *budget) take(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *budget) give(n int64) { b.used.Add(-n) }

// gauge exposes the budget's use.
func (b *budget) gauge(name, help string) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
		func() float64 { return float64(b.used.Load()) })
}

// guard holds the limits' state: the budgets and the refusals' count.
type guard struct {
	limits   Limits
	conns    budget
	bodies   budget
	work     budget
	requests budget
	clients  *clients
	rejected *prometheus.CounterVec
	// gate keeps new HTTP/2 streams from the server while requests fill
	// MaxRequests (h2gate.go).
	gate *h2gate
	// retry chooses each refusal's Retry-After (retry.go).
	retry *retrySpread
}

// release gives back what h holds.
func (g *guard) release(h hold) {
	g.bodies.give(h.body)
	g.work.give(h.work)
	if h.request {
		g.requests.give(1)
	}
	if h.clientWork > 0 {
		g.clients.give(h.client, 0, h.clientWork)
	}
	if h.request {
		g.gate.freed()
	}
}

// takeWork holds a request's place under MaxRequests, if it is set, and
// its units of work for client a: of the global budget, then of the
// client's share.
func (g *guard) takeWork(a netip.Addr, units int64) (hold, *refusal) {
	counted := g.limits.MaxRequests > 0
	if counted && !g.requests.take(1) {
		return hold{}, refuseRequests
	}
	h := hold{work: units, request: counted, client: a}
	if !g.work.take(units) {
		g.release(hold{request: counted})
		return hold{}, refuseBusy
	}
	mine, ok := g.clients.take(a, 0, units)
	if !ok {
		g.release(hold{work: units, request: counted})
		return hold{}, refuseClientBusy
	}
	h.clientWork = mine
	return h, nil
}

func newGuard(l Limits, reg prometheus.Registerer) *guard {
	g := &guard{limits: l, clients: newClients(l), retry: newRetrySpread(returnsPerSecond(l))}
	g.gate = newH2Gate(g)
	g.conns.limit = int64(l.MaxConns)
	g.bodies.limit = l.BodyBytes
	g.work.limit = l.MaxWork
	g.requests.limit = l.MaxRequests
	g.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "surge_front_rejected_total",
		Help: "Connections and requests the front door refused before any handler, by reason (max_conns, body_budget, overloaded, max_requests, body_too_large, unauthorized, framing, body_read, slow_request, malformed, client_conns, client_overloaded, rapid_reset, flow_control).",
	}, []string{"reason"})
	for _, r := range []string{reasonConns, reasonBodyBudget, reasonBodyTooLarge, reasonUnauthorized, reasonFraming, reasonBodyRead, reasonSlow, reasonMalformed, reasonClientConns, reasonClientWork, reasonRapidReset, reasonFlowControl, reasonWork, reasonRequests} {
		g.rejected.WithLabelValues(r)
	}
	limit := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "surge_front_limit",
		Help: "The front door's limits: max_conns (connections), body_bytes (request body bytes held at once), max_work (units of work in progress), max_requests (requests in progress), max_streams (per HTTP/2 connection), max_conns_per_client and max_work_per_client (one client's share), min_body_rate (bytes a second).",
	}, []string{"limit"})
	limit.WithLabelValues("max_conns_per_client").Set(float64(l.MaxConnsPerClient))
	limit.WithLabelValues("max_work_per_client").Set(float64(l.MaxWorkPerClient))
	limit.WithLabelValues("min_body_rate").Set(float64(l.MinBodyRate))
	limit.WithLabelValues("max_conns").Set(float64(l.MaxConns))
	limit.WithLabelValues("body_bytes").Set(float64(l.BodyBytes))
	limit.WithLabelValues("max_work").Set(float64(l.MaxWork))
	limit.WithLabelValues("max_requests").Set(float64(max(l.MaxRequests, 0))) // 0: no bound
	limit.WithLabelValues("max_streams").Set(float64(l.MaxStreams))
	if reg != nil {
		reg.MustRegister(g.rejected, limit,
			g.conns.gauge("surge_front_connections", "Connections open (counted against max_conns)."),
			g.bodies.gauge("surge_front_body_bytes", "Bytes of request bodies admitted and not yet released (counted against body_bytes)."),
			g.work.gauge("surge_front_work", "Units of work in progress: one per request in a handler and one per 128 bytes of its body (counted against max_work)."),
			g.requests.gauge("surge_front_requests", "Requests in progress (counted against max_requests)."))
	}
	return g
}

func (g *guard) reject(reason string) { g.rejected.WithLabelValues(reason).Inc() }

// refusedConn is what a connection past MaxConns receives before it is
// closed: a complete HTTP/1.1 reply, which an HTTP/2 client reads as a
// broken preface and so also gives up on, asking it to come back in
// retryAfter seconds.
func refusedConn(retryAfter int) []byte {
	return []byte("HTTP/1.1 503 Service Unavailable\r\nRetry-After: " + retryAfterValues[retryAfter] + "\r\nConnection: close\r\n" +
		"Content-Type: application/problem+json\r\nContent-Length: " + strconv.Itoa(len(overloadedConns)) + "\r\n\r\n" + overloadedConns)
}

const overloadedConns = `{"type":"https://surge.dev/problems/overloaded","title":"Overloaded","status":503,"code":"overloaded","detail":"too many connections; retry later"}`

// admitConn counts c against MaxConns. Past the limit it answers c 503
// and closes it, and returns nil.
// Past MaxConnsPerClient for its client (unless a trusted proxy) it does
// the same.
func (g *guard) admitConn(c net.Conn) net.Conn {
	if !g.conns.take(1) {
		g.refuseConn(c)
		g.reject(reasonConns)
		return nil
	}
	a := addrOf(c.RemoteAddr())
	capped := !g.clients.isTrusted(a)
	if capped {
		if _, ok := g.clients.take(a, 1, 0); !ok {
			g.conns.give(1)
			g.refuseConn(c)
			g.reject(reasonClientConns)
			return nil
		}
	}
	return &countedConn{Conn: c, g: g, client: a, capped: capped}
}

// refuseConn answers c 503 and closes it.
func (g *guard) refuseConn(c net.Conn) {
	// A fresh socket's send buffer takes the reply without blocking;
	// the deadline only guards against a kernel that disagrees.
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(refusedConn(g.retry.next()))
	_ = c.Close()
}

// countedConn gives its place under MaxConns, and its client's, back when
// it is closed.
type countedConn struct {
	net.Conn
	g      *guard
	client netip.Addr
	capped bool // counted against its client's cap
	once   sync.Once
}

// NetConn is the connection counted, as tls.Conn's NetConn is.
func (c *countedConn) NetConn() net.Conn { return c.Conn }

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.g.conns.give(1)
		if c.capped {
			c.g.clients.give(c.client, 1, 0)
		}
	})
	return c.Conn.Close()
}

// Admission is the front door's budgets and their metrics, shared by a
// Server (Options.Admission) and the gRPC server it hands connections to
// (GRPCOptions), so that a call of either counts against the same limits.
type Admission struct{ g *guard }

// NewAdmission returns the budgets of l, registering their metrics with
// reg (nil: none).
func NewAdmission(l Limits, reg prometheus.Registerer) *Admission {
	return &Admission{g: newGuard(l.withDefaults(), reg)}
}

// Limits are the limits in force.
func (a *Admission) Limits() Limits { return a.g.limits }

// Use is how much of each budget is held now.
type Use struct {
	Conns, BodyBytes, Work, Requests int64
}

// Use reads how much of each budget is held now.
func (a *Admission) Use() Use {
	return Use{Conns: a.g.conns.used.Load(), BodyBytes: a.g.bodies.used.Load(), Work: a.g.work.used.Load(), Requests: a.g.requests.used.Load()}
}

// GRPCOptions are the gRPC server's options under a's limits: each call
// holds a place under MaxRequests and one unit of MaxWork from its
// request message until its handler returns (a streaming call that parks
// gives them back, Park), and a call past either is refused at once
// with UNAVAILABLE ("overloaded", which gRPC clients read as "retry
// later", as HTTP's 503) and a pushback chosen as a Retry-After is
// (retry.go); at most
// MaxStreams streams per connection, each with at most maxHeaderList of
// headers, ended if its request message does not come within
// BodyTimeout; a connection without calls for idle closed with a GOAWAY;
// a silent one pinged every minute and closed if the ping goes unanswered
// for 20 s; a client that pings more often than every 10 s told GOAWAY
// (too_many_pings).
func (a *Admission) GRPCOptions(idle time.Duration) []grpc.ServerOption {
	l := a.g.limits
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(a.g.shedUnary),
		grpc.ChainStreamInterceptor(a.g.shedStream),
		grpc.InTapHandle(a.g.timeSilentCalls),
		grpc.MaxHeaderListSize(maxHeaderList),
		grpc.MaxConcurrentStreams(l.MaxStreams),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: idle, Time: time.Minute, Timeout: 20 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second}),
	}
}

// errGRPCOverloaded is a gRPC call's refusal past MaxWork.
var errGRPCOverloaded = status.Error(codes.Unavailable, "overloaded: the server has as much work in progress as it may take; retry later")

// grpcPushback is a refusal's trailer: gRPC's retry policy waits this
// long before its next attempt (gRFC A6's server pushback), as HTTP's
// Retry-After asks, chosen the same way (retry.go).
func (g *guard) grpcPushback() metadata.MD {
	return metadata.Pairs("grpc-retry-pushback-ms", strconv.Itoa(g.retry.next()*1000))
}

// shedUnary runs a unary call within the work budget, or refuses it.
// Its request message has arrived.
func (g *guard) shedUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	heard(ctx)
	h, no := g.takeWork(peerAddr(ctx), 1)
	if no != nil {
		g.reject(no.reason)
		_ = grpc.SetTrailer(ctx, g.grpcPushback())
		return nil, errGRPCOverloaded
	}
	defer g.release(h)
	return next(ctx, req)
}

// shedStream runs a streaming call, admitted once its first request
// message arrives (admittedStream): refused then, the call ends with the
// refusal.
func (g *guard) shedStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, next grpc.StreamHandler) error {
	s := &admittedStream{ServerStream: ss, g: g}
	defer s.end()
	return next(srv, s)
}

// peerAddr is the address of a gRPC call's client.
func peerAddr(ctx context.Context) netip.Addr {
	if p, ok := peer.FromContext(ctx); ok {
		return addrOf(p.Addr)
	}
	return netip.Addr{}
}
