package telemetry

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// RequestIDHeader carries a request's id: a client may send one (up to
// maxRequestIDLen characters of A-Z, a-z, 0-9 and "-._:"), and the reply
// echoes it. Otherwise surge mints an id, logged with anything the request
// logs and sent back on 5xx replies, where a client needs it to report a
// fault; minting it for every reply would cost an allocation per request.
const RequestIDHeader = "X-Request-Id"

const maxRequestIDLen = 64

// idPrefix makes minted ids unique across restarts; idSeq within a process.
var (
	idPrefix = newIDPrefix()
	idSeq    atomic.Uint64
)

func newIDPrefix() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:]) + "-"
}

// mintRequestID returns a new id for a request whose client sent none.
func mintRequestID() string { return idPrefix + strconv.FormatUint(idSeq.Add(1), 10) }

// validRequestID reports whether a client's id is safe to log and echo.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':'
		if !ok {
			return false
		}
	}
	return true
}

// RequestID returns the id of the request whose ResponseWriter is w, or ""
// if w was not handed out by the Middleware. Transport code logs it with
// every record about the request.
func RequestID(w http.ResponseWriter) string {
	for {
		switch x := w.(type) {
		case *scope:
			return x.id()
		case interface{ Unwrap() http.ResponseWriter }:
			w = x.Unwrap()
		default:
			return ""
		}
	}
}

// scope is the Middleware's view of one request: it wraps the
// ResponseWriter to learn the status, and holds the request's id. Scopes
// are pooled, since the ResponseWriter contract ends their use when the
// handler returns.
type scope struct {
	http.ResponseWriter
	status   int
	clientID string // the client's valid X-Request-Id, echoed
	minted   string // the id surge gave the request, made on first use
}

var scopePool = sync.Pool{New: func() any { return new(scope) }}

func newScope(w http.ResponseWriter, r *http.Request) *scope {
	s := scopePool.Get().(*scope)
	s.ResponseWriter = w
	if v := r.Header[RequestIDHeader]; len(v) == 1 && validRequestID(v[0]) {
		s.clientID = v[0]
		w.Header()[RequestIDHeader] = v // net/http never modifies header values
	}
	return s
}

func (s *scope) release() {
	*s = scope{}
	scopePool.Put(s)
}

// id returns the request's id, minting one if the client sent none.
func (s *scope) id() string {
	if s.clientID != "" {
		return s.clientID
	}
	if s.minted == "" {
		s.minted = mintRequestID()
	}
	return s.minted
}

// WriteHeader notes the final status; a 5xx reply carries the request id.
func (s *scope) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
		if code >= 500 && s.clientID == "" {
			s.Header()[RequestIDHeader] = []string{s.id()}
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write writes body bytes; without an earlier WriteHeader the status is 200.
func (s *scope) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// finalStatus is the status the client got: 200 if nothing was written.
func (s *scope) finalStatus() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Unwrap gives http.ResponseController the wrapped writer.
func (s *scope) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush implements http.Flusher, which gRPC's ServeHTTP and server-sent
// events need.
func (s *scope) Flush() { _ = s.FlushError() }

// FlushError flushes and reports whether the connection took it.
func (s *scope) FlushError() error { return http.NewResponseController(s.ResponseWriter).Flush() }

// Hijack implements http.Hijacker where the wrapped writer can.
func (s *scope) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(s.ResponseWriter).Hijack()
}
