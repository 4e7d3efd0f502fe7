package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Helpers for the key-value API (/v0), the polis highload-dht contract.

func entityPath(key string) string { return "/v0/entity?id=" + url.QueryEscape(key) }

func (c *Client) kvPut(key string, value []byte) (*Response, error) {
	if value == nil {
		value = []byte{} // a PUT always has a body, even an empty one
	}
	return c.raw(http.MethodPut, entityPath(key), "", value)
}

func (c *Client) kvGet(key string) (*Response, error) {
	return c.raw(http.MethodGet, entityPath(key), "", nil)
}

func (c *Client) kvDelete(key string) (*Response, error) {
	return c.raw(http.MethodDelete, entityPath(key), "", nil)
}

// dialRaw opens a TCP connection to the server at base, for tests that
// need the bytes on the wire, and returns it with the host to name in
// requests. The connection gives up after 30 s.
func dialRaw(t *testing.T, base string) (net.Conn, string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	return conn, u.Host
}

// kvRangeChunks sends GET /v0/entities?query on a connection of its own
// and returns the reply's status, whether it was chunked, and its body as
// the chunks that came on the wire. Go's HTTP client joins the chunks, and
// the course's contract is about them: one per entry. Each of headers is
// sent as a header line ("Name: value").
func kvRangeChunks(t *testing.T, base, query string, headers ...string) (status int, chunked bool, chunks []string) {
	t.Helper()
	conn, host := dialRaw(t, base)
	defer conn.Close()
	var extra strings.Builder
	for _, h := range headers {
		extra.WriteString(h + "\r\n")
	}
	fmt.Fprintf(conn, "GET /v0/entities?%s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n", query, host, extra.String())
	raw, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok {
		t.Fatalf("no end of head in %q", raw)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(append(head, "\r\n\r\n"...))), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.TransferEncoding) == 0 {
		if len(body) > 0 {
			chunks = []string{string(body)}
		}
		return resp.StatusCode, false, chunks
	}
	if chunks, err = rawChunks(body); err != nil {
		t.Fatalf("range reply %q: %v", body, err)
	}
	return resp.StatusCode, true, chunks
}

// rawChunks parses a chunked body into its chunks, without trailers.
func rawChunks(body []byte) ([]string, error) {
	var chunks []string
	br := bufio.NewReader(bytes.NewReader(body))
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("chunk size line: %w", err)
		}
		size, err := strconv.ParseInt(strings.TrimRight(line, "\r\n"), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("chunk size %q: %w", line, err)
		}
		if size == 0 {
			return chunks, nil
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(br, data); err != nil {
			return nil, fmt.Errorf("chunk data: %w", err)
		}
		if string(data[size:]) != "\r\n" {
			return nil, fmt.Errorf("chunk not ended by CRLF")
		}
		chunks = append(chunks, string(data[:size]))
	}
}
