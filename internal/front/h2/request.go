package h2

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

var errMalformed = errors.New("h2: malformed request headers")

// newRequest builds the request of a HEADERS frame, checking it as RFC
// 9113 §8.3 and §8.2.2 ask: the request pseudo-headers, each once (the
// framer has checked for duplicates and unknown ones), no
// connection-specific field, TE only "trailers", and one content-length.
// It fills req, which the stream copies once with its context, and
// returns the declared body length, -1 if none.
func (c *conn) newRequest(f *http2.MetaHeadersFrame, req *http.Request) (int64, error) {
	var method, scheme, path, authority string
	for _, hf := range f.PseudoFields() {
		switch hf.Name {
		case ":method":
			method = hf.Value
		case ":scheme":
			scheme = hf.Value
		case ":path":
			path = hf.Value
		case ":authority":
			authority = hf.Value
		default: // :status, or :protocol without extended CONNECT
			return 0, errMalformed
		}
	}
	u, err := requestURL(method, scheme, path, authority)
	if err != nil {
		return 0, err
	}
	hdr, err := requestHeader(f.RegularFields())
	if err != nil {
		return 0, err
	}
	declared, err := contentLength(hdr["Content-Length"])
	if err != nil || f.StreamEnded() && declared > 0 {
		return 0, errMalformed
	}
	host := authority
	if host == "" {
		host = hdr.Get("Host")
	}
	*req = http.Request{
		Method: method, URL: u, Proto: "HTTP/2.0", ProtoMajor: 2,
		Header: hdr, Host: host, RequestURI: path, RemoteAddr: c.remote, TLS: c.tls,
		Body: http.NoBody, ContentLength: declared,
	}
	if f.StreamEnded() {
		req.ContentLength = 0
	}
	if names := hdr["Trailer"]; len(names) > 0 {
		req.Trailer = declaredTrailers(names)
	}
	return declared, nil
}

// requestURL checks the request pseudo-headers (RFC 9113 §8.3.1) and
// parses the target.
func requestURL(method, scheme, path, authority string) (*url.URL, error) {
	switch {
	case method == "":
		return nil, errMalformed
	case method == http.MethodConnect:
		if scheme != "" || path != "" || authority == "" {
			return nil, errMalformed
		}
		return &url.URL{Host: authority}, nil
	case scheme == "" || path == "":
		return nil, errMalformed
	case path == "*" && method == http.MethodOptions:
		return &url.URL{Path: "*"}, nil
	case path[0] != '/':
		return nil, errMalformed
	}
	return url.ParseRequestURI(path)
}

// requestHeader gathers the regular fields into a header, refusing the
// connection-specific ones (RFC 9113 §8.2.2); cookies are joined into one
// field (§8.2.3). A field's first value is a slice of one backing array,
// which a second value of the field leaves by append: two allocations
// for a header rather than one a field.
func requestHeader(fields []hpack.HeaderField) (http.Header, error) {
	hdr := make(http.Header, len(fields))
	vals := make([]string, 0, len(fields))
	for _, hf := range fields {
		switch hf.Name {
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
			return nil, errMalformed
		case "te":
			if hf.Value != "trailers" {
				return nil, errMalformed
			}
		}
		k := canonical(hf.Name)
		if old, ok := hdr[k]; ok {
			hdr[k] = append(old, hf.Value)
			continue
		}
		vals = append(vals, hf.Value)
		hdr[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if cs := hdr["Cookie"]; len(cs) > 1 {
		hdr["Cookie"] = []string{strings.Join(cs, "; ")}
	}
	return hdr, nil
}

// contentLength parses a request's content-length fields, which must
// agree: -1 without one.
func contentLength(vs []string) (int64, error) {
	if len(vs) == 0 {
		return -1, nil
	}
	for _, v := range vs[1:] {
		if v != vs[0] {
			return 0, errMalformed
		}
	}
	n, err := strconv.ParseUint(vs[0], 10, 63)
	if err != nil {
		return 0, errMalformed
	}
	return int64(n), nil
}

// declaredTrailers is a request's Trailer map: the fields its Trailer
// header names, whose values arrive with the body's end.
func declaredTrailers(names []string) http.Header {
	t := http.Header{}
	for _, v := range names {
		for _, name := range strings.Split(v, ",") {
			if name = http.CanonicalHeaderKey(strings.TrimSpace(name)); name != "" {
				t[name] = nil
			}
		}
	}
	return t
}

// requestBody reads a stream's DATA as its handler asks for it, giving
// the bytes read back to the client's windows.
type requestBody struct{ st *stream }

func (b *requestBody) Read(p []byte) (int, error) {
	st := b.st
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for st.bodyOff == len(st.body) {
		switch {
		case st.err != nil:
			return 0, st.err
		case st.timedOut:
			return 0, os.ErrDeadlineExceeded
		case st.clientDone:
			return 0, io.EOF
		}
		st.cond.Wait()
	}
	n := copy(p, st.body[st.bodyOff:])
	st.bodyOff += n
	if st.bodyOff == len(st.body) {
		st.body, st.bodyOff = st.body[:0], 0
	}
	st.unacked += int64(n)
	c.grantLocked(st, int64(n))
	return n, nil
}

// Close stops the body: what the client still sends is discarded.
func (b *requestBody) Close() error { return nil }

// setReadDeadline makes the body's reads fail with os.ErrDeadlineExceeded
// once t has passed; the zero t lifts the deadline.
func (st *stream) setReadDeadline(t time.Time) {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.deadline != nil {
		st.deadline.Stop()
	}
	st.deadlineGen++
	gen := st.deadlineGen
	st.timedOut = false
	if t.IsZero() || st.gone || st.clientDone && st.bodyOff == len(st.body) {
		return // no deadline, or no read left that could wait
	}
	d := time.Until(t)
	if d <= 0 {
		st.timedOut = true
		st.cond.Broadcast()
		return
	}
	st.deadline = time.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if st.deadlineGen == gen { // not a deadline set since
			st.timedOut = true
			st.cond.Broadcast()
		}
	})
}
