package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// kvScript is a key-value session of every kind of request and refusal:
// PUT, GET, DELETE, replacing and deleting absent keys, ranges (bounded,
// open, empty, after a DELETE), bad keys, a value over the limit, unknown
// paths, methods a route does not allow, and requests without the key.
// It returns each exchange as a line: method, path, status, the headers a
// client acts on, and the body.
func kvScript(t *testing.T, base, key string, maxValue int) []string {
	t.Helper()
	c := newClient(base, key)
	var out []string
	note := func(r *Response, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var hdr []string
		for _, h := range []string{"Content-Type", "Allow", "Retry-After", "Www-Authenticate"} {
			if v := r.Header.Get(h); v != "" {
				hdr = append(hdr, h+": "+v)
			}
		}
		out = append(out, fmt.Sprintf("%s %s -> %d [%s] %q", r.Method, r.Path, r.Status, strings.Join(hdr, "; "), r.Body))
	}
	rangeOf := func(query string) {
		t.Helper()
		st, chunked, chunks := kvRangeChunks(t, base, query, "Authorization: Bearer "+key)
		out = append(out, fmt.Sprintf("range %s -> %d chunked=%v %q", query, st, chunked, chunks))
	}
	for i := range 12 {
		note(c.kvPut(fmt.Sprintf("same-%02d", i), []byte(fmt.Sprintf("value %d\nline two", i))))
	}
	note(c.kvPut("same-03", []byte("replaced")))
	note(c.kvPut("same-empty", nil))
	note(c.kvGet("same-03"))
	note(c.kvGet("same-empty"))
	note(c.kvGet("same-none"))
	note(c.kvDelete("same-05"))
	note(c.kvDelete("same-none"))
	note(c.kvGet("same-05"))
	rangeOf("start=same-")
	rangeOf("start=same-02&end=same-07")
	rangeOf("start=same-99&end=same-a")
	rangeOf("start=same-04&end=same-04")
	rangeOf("start=")
	rangeOf("start=a%zz")
	note(c.kvPut("k"+strings.Repeat("x", 1024), []byte("v")))
	note(c.kvPut("line\nbreak", []byte("v")))
	note(c.raw(http.MethodGet, "/v0/entity", "", nil))
	note(c.raw(http.MethodGet, "/v0/entity?id=%zz", "", nil))
	note(c.kvPut("same-big", make([]byte, maxValue+1)))
	note(c.kvPut("same-fits", make([]byte, maxValue)))
	note(c.kvDelete("same-fits"))
	note(c.raw(http.MethodPost, "/v0/entity?id=same-00", "", []byte("v")))
	note(c.raw(http.MethodPost, "/v0/entities?start=a", "", []byte("v")))
	note(c.raw(http.MethodGet, "/v0/nothing", "", nil))
	note(c.raw(http.MethodGet, "/v0", "", nil))
	note(c.withKey("").kvGet("same-00"))
	note(c.withKey("wrong").kvPut("same-00", []byte("v")))
	note(c.withKey("").raw(http.MethodGet, "/v0/entities?start=a", "", nil))
	note(c.kvGet("same-00"))
	return out
}

// The key-value routes answer a cluster node's clients as they answer a
// single process's: the same script, against a single process and then
// against a node of the cluster, gives the same exchanges line for line.
func (c *clusterNodes) kvAsOneNode(t *testing.T) {
	single := start(t, t.TempDir(), "--api-key", clusterKey, "--kv-max-value", strconv.Itoa(clusterKVValue))
	want := kvScript(t, single.url, clusterKey, clusterKVValue)
	got := kvScript(t, c.nodes[1].url, clusterKey, clusterKVValue)
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) || want[i] != got[i] {
			t.Fatalf("a cluster node answered, from line %d,\n%s\n\nthe single process\n%s", i+1,
				strings.Join(got[min(i, len(got)):], "\n"), strings.Join(want[min(i, len(want)):], "\n"))
		}
	}
}
