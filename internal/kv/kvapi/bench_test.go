package kvapi

import (
	"bytes"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/surge-dev/surge/internal/kv/kvstore"
	"github.com/surge-dev/surge/internal/store"
)

// benchHandler returns a handler over a store holding key "k0000000042".
func benchHandler(b *testing.B, noSync bool) *Handler {
	b.Helper()
	db, err := store.Open(b.TempDir(), store.Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	s := kvstore.New(db, nil)
	h := New(s, Options{})
	if err := s.Put("k0000000042", bytes.Repeat([]byte("v"), 100)); err != nil {
		b.Fatal(err)
	}
	return h
}

// benchEntity serves one request of method (and body) to /v0/entity for
// the key over and over, on a RequestCtx reused as fasthttp reuses its own,
// so that the benchmarks count the handler's allocations.
func benchEntity(b *testing.B, h *Handler, method string, body []byte) {
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI("/v0/entity?id=k0000000042")
	req.SetBody(body)
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, nil, nil)
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Reset()
		h.serveEntity(&ctx)
	}
	if s := ctx.Response.StatusCode(); s >= 300 {
		b.Fatalf("status %d", s)
	}
}

func BenchmarkHandlerGet(b *testing.B) { benchEntity(b, benchHandler(b, false), "GET", nil) }

// BenchmarkHandlerPutNoSync measures a PUT's CPU cost without the fsync
// it waits for (which, with --no-sync off, dominates one writer's latency).
func BenchmarkHandlerPutNoSync(b *testing.B) {
	benchEntity(b, benchHandler(b, true), "PUT", bytes.Repeat([]byte("w"), 100))
}

// BenchmarkHandlerPutSync is one writer's durable PUT: mostly the fsync.
func BenchmarkHandlerPutSync(b *testing.B) {
	benchEntity(b, benchHandler(b, false), "PUT", bytes.Repeat([]byte("w"), 100))
}
