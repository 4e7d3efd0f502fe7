// Package vmr serves VMR chat's API (github.com/delta94/vmr-chatapp-1) as
// a face of surge's wallet: its REST routes (/api/public/*,
// /api/protected/*), its WebSocket (/ws) and its gRPC services (package
// vmr: WalletService, FriendService) over gRPC, gRPC-Web and Connect, all
// on surge's one port. Every call runs as a call of surge.wallet.v1
// (rpc.Local): one user base, one ledger, one set of conversations, and
// surge's tokens, which both APIs accept. docs/API.md ("VMR chat") says
// what differs from the original and why.
package vmr

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/wallet/rpc"
)

// Options configure a Face.
type Options struct {
	// Origins are the web origins (--cors-origins) whose pages may open
	// the WebSocket; "*" allows any. Same-origin pages always may.
	Origins []string
	Logger  *slog.Logger
}

// Face is the VMR API over a wallet service. It is safe for concurrent
// use.
type Face struct {
	local   rpc.Local
	log     *slog.Logger
	origins []string // host[:port] patterns for the WebSocket's origin check
	anyOrig bool

	revoked revocations
	sockets sockets
}

// New returns the VMR face of local.
func New(local rpc.Local, opts Options) *Face {
	f := &Face{local: local, log: opts.Logger, revoked: revocations{until: map[string]time.Time{}}, sockets: newSockets()}
	f.sockets.cluster = local.WatchPresence(f.sockets.presenceChanged)
	if f.log == nil {
		f.log = slog.Default()
	}
	for _, o := range opts.Origins {
		if o == "*" {
			f.anyOrig = true
		} else if _, host, ok := strings.Cut(o, "://"); ok {
			f.origins = append(f.origins, host)
		}
	}
	return f
}

// Owns reports whether path is VMR's: its RPCs, its WebSocket, its REST
// routes.
func Owns(path string) bool {
	return strings.HasPrefix(path, "/vmr.") || path == WebSocketPath || strings.HasPrefix(path, "/api/")
}

// Handler serves VMR's paths (see Owns).
func (f *Face) Handler() http.Handler {
	grpcRoutes := f.rpcHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/vmr."):
			grpcRoutes.ServeHTTP(w, r)
		case f.local.Sync(r.Context()) != nil:
			http.Error(w, "the cluster's social log does not answer; try again", http.StatusServiceUnavailable)
		case p == WebSocketPath:
			f.serveWebSocket(w, r)
		default:
			f.serveREST(w, r)
		}
	})
}

// SlowPrefixes are the paths whose connections net/http must serve (see
// package front): the RPCs, some of which gRPC-Web clients hold open, and
// the WebSocket.
var SlowPrefixes = []string{"/vmr.", WebSocketPath}

// revocations are the tokens logged out, until they expire.
type revocations struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// revoke refuses token from now until exp.
func (r *revocations) revoke(token string, exp time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for t, e := range r.until { // forget what has expired anyway
		if now.After(e) {
			delete(r.until, t)
		}
	}
	r.until[token] = exp
}

func (r *revocations) has(token string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.until[token]
	return ok
}

// authenticate returns the user of token, if it is valid and not logged
// out.
func (f *Face) authenticate(token string) (uint64, bool) {
	if token == "" || f.revoked.has(token) {
		return 0, false
	}
	id, err := f.local.Verify(token)
	return id, err == nil
}
