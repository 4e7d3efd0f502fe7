// Package kvapi is the HTTP transport of surge's key-value storage, the
// polis highload-dht API (docs/API.md, "Key-value storage"), answering
// exactly as the course's service did so that its tests, clients and wrk
// scripts run unchanged:
//
//	GET|PUT|DELETE /v0/entity?id=K    200 value | 404, 201, 202
//	GET /v0/entities?start=K[&end=K]  200, one chunk per entry: key \n value
//
// A missing or empty id or start, and an unknown /v0 path, get 400; other
// methods 405; a value over the limit 413. Error bodies are one line of
// plain text: the course's clients read only the status.
package kvapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/kv"
)

// Store is the key-value entries a Handler serves: one process's
// (kvstore.Store) or a cluster's, each key on its partition's owner
// (kvcluster.KV). The handler checks keys and values (package kv) before it
// calls the store, and answers both alike.
type Store interface {
	// Get returns key's value appended to dst, or found false, once the
	// answer is durable.
	Get(ctx context.Context, key string, dst []byte) (value []byte, found bool, err error)
	// PutNoWait stores value under key and returns once the write is
	// readable; its Wait returns once it is durable.
	PutNoWait(ctx context.Context, key string, value []byte) (kv.Write, error)
	// DeleteNoWait removes key, returning as PutNoWait does.
	DeleteNoWait(ctx context.Context, key string) (kv.Write, error)
	// Scan opens the entries of [start, end), or from start to the last
	// key if end is empty.
	Scan(ctx context.Context, start, end string) (kv.Entries, error)
}

// Options configure a Handler.
type Options struct {
	// MaxValueBytes bounds a PUT's value (0: kv.DefaultMaxValueBytes).
	MaxValueBytes int
	// Authorize, if set, must accept a request's Authorization header
	// ("" if absent) before it is served; the server passes the ledger
	// API's bearer-key check, so that --api-key guards the stored data too.
	Authorize func(authorization string) bool
	// Registry receives the transport's metrics; nil means none.
	Registry prometheus.Registerer
	// Logger receives server faults; nil means slog.Default().
	Logger *slog.Logger
}

// Handler serves /v0. It is safe for concurrent use.
type Handler struct {
	kv       Store
	maxValue int
	auth     func(authorization string) bool
	log      *slog.Logger
	metrics  *metrics
}

// New returns a Handler serving the entries of s.
func New(s Store, o Options) *Handler {
	h := &Handler{kv: s, maxValue: o.MaxValueBytes, auth: o.Authorize, log: o.Logger, metrics: newMetrics(o.Registry)}
	if h.maxValue <= 0 {
		h.maxValue = kv.DefaultMaxValueBytes
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	return h
}

// Owns reports whether h serves path: /v0 and everything below it, but
// the native /v0/entity (FastRoutes). It is a prefix test, not a ServeMux:
// ServeMux would redirect unclean /v0 paths instead of refusing them, and
// its matching costs more than the test on the hot path.
func Owns(path string) bool { return path == "/v0" || strings.HasPrefix(path, "/v0/") }

// ServeHTTP serves one /v0 request and records its metrics.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	o, status := opOther, http.StatusInternalServerError
	defer func() { h.metrics.done(o, status, start) }()
	defer h.recoverPanic(w, r)
	o, status = h.serve(w, r)
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) (op, int) {
	if a := r.Header["Authorization"]; h.auth != nil && (len(a) > 1 || !h.auth(strings.Join(a, ""))) {
		w.Header()["Www-Authenticate"] = bearerChallenge
		return opOther, fail(w, http.StatusUnauthorized, unauthorized)
	}
	if r.URL.Path == "/v0/entities" {
		return opRange, h.entities(w, r)
	}
	return opOther, fail(w, http.StatusBadRequest, unknownPath)
}

const (
	unauthorized = "this API needs Authorization: Bearer <api key>"
	unknownPath  = "unknown path: /v0 has /v0/entity?id= and /v0/entities?start="
)

var (
	bearerChallenge = []string{"Bearer"}
	allowEntities   = []string{"GET"}
	octetStream     = []string{"application/octet-stream"}
	textPlain       = []string{"text/plain; charset=utf-8"}
)

func tooLarge(limit int) string {
	return "value larger than the limit of " + strconv.Itoa(limit) + " bytes"
}

// maxPooledBuffer is the largest buffer kept for reuse: a rare huge value
// should not pin its memory forever.
const maxPooledBuffer = 64 << 10

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) <= maxPooledBuffer {
		*b = (*b)[:0]
		buffers.Put(b)
	}
}

// rangeStall bounds how long one entry of a range may take to reach the
// client: a client that stops reading would otherwise pin the range's
// storage snapshot for as long as it kept the connection.
const rangeStall = 30 * time.Second

// fail writes a plain-text error and returns its status.
func fail(w http.ResponseWriter, status int, msg string) int {
	hdr := w.Header()
	hdr["Content-Type"] = textPlain
	hdr["X-Content-Type-Options"] = []string{"nosniff"}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
	return status
}

// logFault logs a storage failure, which the client sees as a bare 500.
func (h *Handler) logFault(requestID, what string, err error) {
	h.log.Error("key-value storage failed", "request_id", requestID, "op", what, "err", err)
}

// recoverPanic turns a panic (a bug, never the client's doing) into a
// logged 500, rather than a dropped connection; http.ErrAbortHandler goes
// on up, since it asks for exactly that.
func (h *Handler) recoverPanic(w http.ResponseWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	h.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
	fail(w, http.StatusInternalServerError, "internal error") // a no-op on the wire if the reply had started
}

// MaxValueBytes is the largest value h stores; larger PUTs get 413.
func (h *Handler) MaxValueBytes() int { return h.maxValue }
