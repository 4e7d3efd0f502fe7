package e2e

import (
	"bytes"
	"crypto/rand"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestKVCourseSuite asserts, against the real binary over HTTP, what the
// polis highload-dht course's own tests assert of a single node (its
// SingleNodeTest and SingleRangeTest), so that the course's clients run
// unchanged against surge.
func TestKVCourseSuite(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir)
	c := srv.c
	value := func() []byte {
		b := make([]byte, 64)
		_, _ = rand.Read(b) // binary, as the course's randomValue
		return b
	}
	status := func(r *Response, err error) int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	wantGet := func(key string, want []byte) {
		t.Helper()
		r, err := c.kvGet(key)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusOK || !bytes.Equal(r.Body, want) {
			t.Errorf("GET %q: %d %q, want 200 %q", key, r.Status, r.Body, want)
		}
	}
	wantStatus := func(what string, got, want int) {
		t.Helper()
		if got != want {
			t.Errorf("%s: status %d, want %d", what, got, want)
		}
	}

	t.Run("empty and missing id", func(t *testing.T) {
		wantStatus("GET id=", status(c.kvGet("")), 400)
		wantStatus("DELETE id=", status(c.kvDelete("")), 400)
		wantStatus("PUT id=", status(c.kvPut("", []byte{0})), 400)
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			wantStatus(m+" /v0/entity", status(c.raw(m, "/v0/entity", "", nil)), 400)
		}
	})
	t.Run("unknown path", func(t *testing.T) {
		wantStatus("GET /v0/abracadabra", status(c.raw("GET", "/v0/abracadabra", "", nil)), 400)
	})
	t.Run("absent", func(t *testing.T) {
		wantStatus("GET absent", status(c.kvGet("absent")), 404)
		wantStatus("DELETE absent", status(c.kvDelete("absent")), 202)
	})
	t.Run("insert, overwrite, empty", func(t *testing.T) {
		v1, v2 := value(), value()
		wantStatus("PUT", status(c.kvPut("k1", v1)), 201)
		wantGet("k1", v1)
		wantStatus("PUT again", status(c.kvPut("k1", v2)), 201)
		wantGet("k1", v2)
		wantStatus("PUT empty", status(c.kvPut("k1", nil)), 201)
		wantGet("k1", []byte{})
		wantStatus("PUT empty new", status(c.kvPut("k-empty", nil)), 201)
		wantGet("k-empty", []byte{})
	})
	t.Run("lifecycle of two keys", func(t *testing.T) {
		v1, v2 := value(), value()
		wantStatus("PUT 1", status(c.kvPut("l1", v1)), 201)
		wantStatus("PUT 2", status(c.kvPut("l2", v2)), 201)
		wantGet("l1", v1)
		wantGet("l2", v2)
		wantStatus("DELETE 1", status(c.kvDelete("l1")), 202)
		wantStatus("GET 1", status(c.kvGet("l1")), 404)
		wantGet("l2", v2)
		wantStatus("DELETE 2", status(c.kvDelete("l2")), 202)
		wantStatus("GET 2", status(c.kvGet("l2")), 404)
	})
	t.Run("POST", func(t *testing.T) {
		wantStatus("POST", status(c.raw("POST", entityPath("p"), "", value())), 405)
		wantStatus("GET after POST", status(c.kvGet("p")), 404)
	})
	t.Run("range: missing start", func(t *testing.T) {
		wantStatus("no query", status(c.raw("GET", "/v0/entities", "", nil)), 400)
		wantStatus("end only", status(c.raw("GET", "/v0/entities?end=end", "", nil)), 400)
		wantStatus("empty start", status(c.raw("GET", "/v0/entities?start=&end=", "", nil)), 400)
	})
	t.Run("range over 0, 1 and 3 keys", func(t *testing.T) {
		wantRange := func(query string, want ...string) {
			t.Helper()
			st, chunked, chunks := kvRangeChunks(t, srv.url, query)
			if st != 200 || !slices.Equal(chunks, want) {
				t.Errorf("range %s: %d, chunks %q, want 200 %q", query, st, chunks, want)
			}
			if len(want) > 0 && !chunked {
				t.Errorf("range %s: not chunked", query)
			}
		}
		wantRange("start=absent0&end=absent1")
		wantStatus("PUT single1", status(c.kvPut("single1", []byte("value1"))), 201)
		wantRange("start=single1&end=single2", "single1\nvalue1")
		wantRange("start=single&end=single1") // the course starts at "a"; earlier subtests left keys there
		wantRange("start=single2&end=single3")
		// Inserted in reverse, one with an empty value.
		for _, kv := range [][2]string{{"triple3", "value3"}, {"triple2", ""}, {"triple1", "value1"}} {
			wantStatus("PUT "+kv[0], status(c.kvPut(kv[0], []byte(kv[1]))), 201)
		}
		wantRange("start=triple1&end=triple4", "triple1\nvalue1", "triple2\n", "triple3\nvalue3")
		wantRange("start=triple0&end=triple1")
		wantRange("start=triple0&end=triple2", "triple1\nvalue1")
		wantRange("start=triple1&end=triple2", "triple1\nvalue1")
		wantRange("start=triple2&end=triple3", "triple2\n")
		wantRange("start=triple3&end=triple4", "triple3\nvalue3")
		wantRange("start=triple4")
	})
	t.Run("limits", func(t *testing.T) {
		wantStatus("long key", status(c.kvPut(strings.Repeat("k", 1025), []byte("v"))), 400)
		wantStatus("newline in key", status(c.kvPut("a\nb", []byte("v"))), 400)
		wantStatus("invalid UTF-8 key", status(c.raw("PUT", "/v0/entity?id=%FF", "", []byte("v"))), 400)
		wantStatus("value over 1 MiB", status(c.kvPut("big", make([]byte, 1<<20+1))), 413)
		wantStatus("GET big", status(c.kvGet("big")), 404)
		wantStatus("value of 1 MiB", status(c.kvPut("big", make([]byte, 1<<20))), 201)
	})
	t.Run("restart", func(t *testing.T) {
		v := value()
		wantStatus("PUT", status(c.kvPut("r", v)), 201)
		srv.stop()
		srv = start(t, dir)
		c = srv.c
		wantGet("r", v)
		wantGet("k-empty", []byte{})
		wantStatus("GET deleted", status(c.kvGet("l1")), 404)
	})
}

// TestKVAPIKey checks that --api-key guards the stored data too.
func TestKVAPIKey(t *testing.T) {
	srv := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--api-key", "sekret"}, nil)
	srv.awaitReady("sekret")
	anon := srv.c.withKey("")
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		r, err := anon.raw(m, entityPath("k"), "", []byte("v"))
		if err != nil || r.Status != http.StatusUnauthorized {
			t.Errorf("%s without the key: %v %v, want 401", m, r, err)
		}
	}
	if r, err := srv.c.kvPut("k", []byte("v")); err != nil || r.Status != 201 {
		t.Fatalf("PUT with the key: %v %v", r, err)
	}
	if r, err := srv.c.kvGet("k"); err != nil || string(r.Body) != "v" {
		t.Errorf("GET with the key: %v %v", r, err)
	}

}
