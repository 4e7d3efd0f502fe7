package kvapi

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/surge-dev/surge/internal/kv/kvstore"
	"github.com/surge-dev/surge/internal/store"
)

// FuzzQueryParam checks the hand-written query parser against net/url's:
// wherever url.ParseQuery accepts a query, both find the same first value.
func FuzzQueryParam(f *testing.F) {
	for _, s := range []string{"id=k", "id=", "", "id", "a=1&id=x&id=y", "%69d=k", "id=a+b%20c", "id=%zz", "x=%zz&id=k", "id=%D0%BA&from=1&ack=2", "&&id=k&"} {
		f.Add(s, "id")
	}
	f.Fuzz(func(t *testing.T, raw, name string) {
		got, present, err := queryParam(raw, name)
		if err != nil && (present || got != "") {
			t.Fatalf("queryParam(%q, %q) = %q, %v, %v: a value with an error", raw, name, got, present, err)
		}
		q, perr := url.ParseQuery(raw)
		if perr != nil {
			return
		}
		vs, ok := q[name]
		if err != nil || present != ok || (ok && got != vs[0]) {
			t.Fatalf("queryParam(%q, %q) = %q, %v, %v; net/url finds %q", raw, name, got, present, err, vs)
		}
	})
}

// FuzzRequest serves arbitrary request targets and methods and checks that
// every answer is one the API documents and never a server fault.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		"/v0/entity?id=k", "/v0/entity", "/v0/entities?start=a&end=b", "/v0/entities?end=a", "/v0/x",
		"/v0/entity?id=%FF", "/v0/entity?id=a%0Ab", "/v0/entities?start=b&end=a", "/v0//entity?id=k",
	} {
		for _, m := range []string{"GET", "PUT", "DELETE", "POST"} {
			f.Add(m, s, "value")
		}
	}
	db, err := store.Open(f.TempDir(), store.Options{NoSync: true, CacheBytes: 8 << 20, MemTableBytes: 4 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	h := New(kvstore.New(db, nil), Options{MaxValueBytes: 64})
	allowed := map[int]bool{200: true, 201: true, 202: true, 400: true, 404: true, 405: true, 413: true}
	f.Fuzz(func(t *testing.T, method, target, body string) {
		raw := method + " " + target + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil || !strings.HasPrefix(req.URL.Path, "/v0") {
			return // not a request that would reach the handler
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if !allowed[rec.Code] {
			t.Fatalf("%s %s: status %d %q", method, target, rec.Code, rec.Body)
		}
	})
}
