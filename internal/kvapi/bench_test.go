package kvapi

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/surge-dev/surge/internal/kvstore"
	"github.com/surge-dev/surge/internal/store"
)

// discardWriter is a ResponseWriter that keeps nothing, reused across
// requests, so that the benchmarks count the handler's own allocations and
// not a recorder's.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

// benchHandler returns a handler over a store holding key "k0000000042".
func benchHandler(b *testing.B, noSync bool) *Handler {
	b.Helper()
	db, err := store.Open(b.TempDir(), store.Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	h := New(kvstore.New(db, nil), Options{})
	if err := h.kv.Put("k0000000042", bytes.Repeat([]byte("v"), 100)); err != nil {
		b.Fatal(err)
	}
	return h
}

func benchRequest(method string, body []byte) (*http.Request, *bytes.Reader) {
	u, _ := url.ParseRequestURI("/v0/entity?id=k0000000042")
	rd := bytes.NewReader(body)
	return &http.Request{Method: method, URL: u, Header: http.Header{}, Body: io.NopCloser(rd), ContentLength: int64(len(body))}, rd
}

func BenchmarkHandlerGet(b *testing.B) {
	h := benchHandler(b, false)
	req, _ := benchRequest("GET", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
}

// BenchmarkHandlerPutNoSync measures a PUT's CPU cost without the fsync
// it waits for (which, with --no-sync off, dominates one writer's latency).
func BenchmarkHandlerPutNoSync(b *testing.B) {
	h := benchHandler(b, true)
	value := bytes.Repeat([]byte("w"), 100)
	req, rd := benchRequest("PUT", value)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(value)
		h.ServeHTTP(w, req)
	}
}

// BenchmarkHandlerPutSync is one writer's durable PUT: mostly the fsync.
func BenchmarkHandlerPutSync(b *testing.B) {
	h := benchHandler(b, false)
	value := bytes.Repeat([]byte("w"), 100)
	req, rd := benchRequest("PUT", value)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(value)
		h.ServeHTTP(w, req)
	}
}
