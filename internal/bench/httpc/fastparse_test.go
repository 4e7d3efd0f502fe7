package httpc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// parseCase is one reply stream and what readResponse must make of its
// first reply.
type parseCase struct {
	name      string
	in        string
	noBody    bool // a HEAD request
	status    int
	body      string
	keepAlive bool
	err       error // errMalformed, io.EOF or io.ErrUnexpectedEOF; nil for success
}

var parseCases = []parseCase{
	{name: "content-length", in: "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"id\":\"a\"}\n",
		status: 201, body: "{\"id\":\"a\"}\n", keepAlive: true},
	{name: "field names ignore case", in: "HTTP/1.1 200 OK\r\ncOnTeNt-LeNgTh: 2\r\nCONNECTION: CLOSE\r\n\r\nhi",
		status: 200, body: "hi"},
	{name: "empty body", in: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", status: 200, keepAlive: true},
	{name: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext=1\r\n \r\nA \r\n0123456789\r\n0\r\n\r\n",
		status: 200, body: "hello 0123456789", keepAlive: true},
	{name: "chunked with trailers", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 1\r\n folded\r\nX-Other: 2\r\n\r\n",
		status: 200, body: "abc", keepAlive: true},
	{name: "bare LF ends head lines", in: "HTTP/1.1 200 OK\nContent-Length: 1\n\nx", status: 200, body: "x", keepAlive: true},
	{name: "no reason phrase", in: "HTTP/1.1 204\r\n\r\n", status: 204, keepAlive: true},
	{name: "empty reason phrase", in: "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n", status: 200, keepAlive: true},
	{name: "problem reply", in: "HTTP/1.1 422 Unprocessable Entity\r\nContent-Type: application/problem+json\r\nContent-Length: 30\r\n\r\n{\"code\":\"insufficient_funds\"}\n",
		status: 422, body: "{\"code\":\"insufficient_funds\"}\n", keepAlive: true},
	{name: "connection close", in: "HTTP/1.1 503 Service Unavailable\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", status: 503},
	{name: "http/1.0 closes", in: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x"},
	{name: "http/1.0 keep-alive", in: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x", keepAlive: true},
	{name: "until close", in: "HTTP/1.1 200 OK\r\n\r\nall of it", status: 200, body: "all of it"},
	{name: "repeated equal lengths", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x", keepAlive: true},
	{name: "interim replies skipped", in: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		status: 200, body: "ok", keepAlive: true},
	{name: "head has no content", in: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", noBody: true, status: 200, keepAlive: true},
	{name: "304 has no content", in: "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", status: 304, keepAlive: true},
	{name: "folded other field", in: "HTTP/1.1 200 OK\r\nX-Long: a\r\n b\r\nContent-Length: 0\r\n\r\n", status: 200, keepAlive: true},

	{name: "nothing", in: "", err: io.EOF},
	{name: "cut in status line", in: "HTTP/1.1 20", err: io.ErrUnexpectedEOF},
	{name: "cut in head", in: "HTTP/1.1 200 OK\r\nContent-Le", err: io.ErrUnexpectedEOF},
	{name: "cut before empty line", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", err: io.ErrUnexpectedEOF},
	{name: "cut in body", in: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", err: io.ErrUnexpectedEOF},
	{name: "cut in chunk", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", err: io.ErrUnexpectedEOF},
	{name: "cut before last chunk", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", err: io.ErrUnexpectedEOF},
	{name: "cut in trailers", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n", err: io.ErrUnexpectedEOF},
	{name: "cut after interim", in: "HTTP/1.1 100 Continue\r\n\r\n", err: io.ErrUnexpectedEOF},

	{name: "not http", in: "SSH-2.0-OpenSSH\r\n\r\n", err: errMalformed},
	{name: "bad status code", in: "HTTP/1.1 2x0 OK\r\n\r\n", err: errMalformed},
	{name: "short status code", in: "HTTP/1.1 20 OK\r\n\r\n", err: errMalformed},
	{name: "long status code", in: "HTTP/1.1 2000 OK\r\n\r\n", err: errMalformed},
	{name: "status below 100", in: "HTTP/1.1 099 Odd\r\n\r\n", err: errMalformed},
	{name: "http/2 status line", in: "HTTP/2.0 200 OK\r\n\r\n", err: errMalformed},
	{name: "lower-case version", in: "http/1.1 200 OK\r\n\r\n", err: errMalformed},
	{name: "control in reason", in: "HTTP/1.1 200 O\x00K\r\n\r\n", err: errMalformed},
	{name: "header without colon", in: "HTTP/1.1 200 OK\r\nContent-Length 1\r\n\r\nx", err: errMalformed},
	{name: "space before colon", in: "HTTP/1.1 200 OK\r\nContent-Length : 1\r\n\r\nx", err: errMalformed},
	{name: "empty field name", in: "HTTP/1.1 200 OK\r\n: 1\r\n\r\n", err: errMalformed},
	{name: "CR inside value", in: "HTTP/1.1 200 OK\r\nX-A: a\rContent-Length: 1\r\n\r\nx", err: errMalformed},
	{name: "continuation first", in: "HTTP/1.1 200 OK\r\n X: 1\r\n\r\n", err: errMalformed},
	{name: "folded length", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n 2\r\n\r\nx", err: errMalformed},
	{name: "folded connection", in: "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n close\r\nContent-Length: 0\r\n\r\n", err: errMalformed},
	{name: "signed length", in: "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx", err: errMalformed},
	{name: "length list", in: "HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\nx", err: errMalformed},
	{name: "empty length", in: "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", err: errMalformed},
	{name: "conflicting lengths", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy", err: errMalformed},
	{name: "huge length", in: "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", err: errMalformed},
	{name: "length over limit", in: "HTTP/1.1 200 OK\r\nContent-Length: 900000000\r\n\r\n", err: errMalformed},
	{name: "both framings", in: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", err: errMalformed},
	{name: "gzip coding", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", err: errMalformed},
	{name: "identity coding", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nx", err: errMalformed},
	{name: "chunked twice", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", err: errMalformed},
	{name: "coding list", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: ,chunked\r\n\r\n0\r\n\r\n", err: errMalformed},
	{name: "empty coding list", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\n", err: errMalformed},
	{name: "chunked in http/1.0", in: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", err: errMalformed},
	{name: "bad chunk size", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", err: errMalformed},
	{name: "signed chunk size", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", err: errMalformed},
	{name: "huge chunk size", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n", err: errMalformed},
	{name: "chunk over limit", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8000000\r\n", err: errMalformed},
	{name: "chunk longer than size", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", err: errMalformed},
	{name: "chunk line with bare LF", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n0\r\n\r\n", err: errMalformed},
	{name: "chunk data ended by bare LF", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\n0\r\n\r\n", err: errMalformed},
	{name: "garbage after chunk size", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 x\r\nab\r\n0\r\n\r\n", err: errMalformed},
	{name: "trailer ended by bare LF", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: 1\n\r\n", err: errMalformed},
	{name: "chunked body ended by bare LF", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\n", err: errMalformed},
	{name: "trailer continuation first", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n X: 1\r\n\r\n", err: errMalformed},
	{name: "bad trailer", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nnot a field\r\n\r\n", err: errMalformed},
	{name: "switching protocols", in: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", err: errMalformed},
	{name: "endless interim replies", in: strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", maxInformational+1) + "HTTP/1.1 200 OK\r\n\r\n", err: errMalformed},
	{name: "line longer than the buffer", in: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", fastBufferSize) + "\r\n\r\n", err: errMalformed},
	{name: "header section over the limit", in: "HTTP/1.1 200 OK\r\n" + strings.Repeat("X: "+strings.Repeat("a", 1000)+"\r\n", maxHeaderBytes/1000) + "\r\n", err: errMalformed},
}

func TestReadResponse(t *testing.T) {
	for _, tc := range parseCases {
		// The whole stream at once, and a byte at a time: the parser
		// must not depend on how reads split it.
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tc.in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			rep, body, err := readResponse(bufio.NewReaderSize(r, fastBufferSize), tc.noBody, []byte("stale"))
			switch {
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Errorf("%s (one byte %v): err = %v, want %v", tc.name, oneByte, err, tc.err)
			case tc.err == nil && err != nil:
				t.Errorf("%s (one byte %v): err = %v", tc.name, oneByte, err)
			case tc.err == nil && (rep.status != tc.status || string(body) != tc.body || rep.keepAlive != tc.keepAlive):
				t.Errorf("%s (one byte %v): status %d body %q keep-alive %v; want %d %q %v",
					tc.name, oneByte, rep.status, body, rep.keepAlive, tc.status, tc.body, tc.keepAlive)
			}
		}
	}
}

// TestReadResponseStream reads replies back to back from one connection's
// reader, as a VU does, reusing one body buffer: each must end exactly
// where the next begins.
func TestReadResponseStream(t *testing.T) {
	in := "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none" +
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n" +
		"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nthree"
	br := bufio.NewReaderSize(strings.NewReader(in), 32)
	var buf []byte
	for _, want := range []string{"one", "two", "three"} {
		rep, body, err := readResponse(br, false, buf)
		if err != nil || string(body) != want || !rep.keepAlive {
			t.Fatalf("got %q %+v %v, want %q", body, rep, err, want)
		}
		buf = body
	}
	if _, _, err := readResponse(br, false, buf); err != io.EOF {
		t.Errorf("after the last reply: %v, want io.EOF", err)
	}
}

// FuzzParseResponse feeds readResponse arbitrary bytes. It must never
// panic, never read past the input, and never accept what net/http's own
// parser rejects or reads differently: whenever readResponse accepts a
// reply, http.ReadResponse must accept the same bytes with the same
// status, content and connection reuse. (The converse does not hold, by
// design: readResponse refuses ambiguous framing net/http tolerates.)
func FuzzParseResponse(f *testing.F) {
	for _, tc := range parseCases {
		if len(tc.in) < 4096 {
			f.Add([]byte(tc.in), tc.noBody)
		}
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 204 No Content\r\n\r\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, noBody bool) {
		// Ours reads a byte at a time, to cross every buffer boundary;
		// net/http reads the same bytes from its own reader.
		ours := bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(data)), 4096)
		theirs := bufio.NewReader(bytes.NewReader(data))
		method := http.MethodPost
		if noBody {
			method = http.MethodHead
		}
		var buf []byte
		for range 4 { // a few replies back to back, as on a kept-alive connection
			rep, body, err := readResponse(ours, noBody, buf)
			if err != nil {
				return
			}
			buf = body
			if rep.status < 200 || rep.status > 999 || len(body) > len(data) {
				t.Fatalf("accepted status %d with %d bytes of content from %d bytes", rep.status, len(body), len(data))
			}
			resp, content, err := readStd(theirs, method)
			if err != nil {
				t.Fatalf("accepted what net/http rejects (%v): status %d body %q", err, rep.status, body)
			}
			if resp.StatusCode != rep.status || !bytes.Equal(content, body) || resp.Close == rep.keepAlive {
				t.Fatalf("read differently: ours %d %q keep-alive %v; net/http %d %q close %v",
					rep.status, body, rep.keepAlive, resp.StatusCode, content, resp.Close)
			}
			if !rep.keepAlive {
				return
			}
		}
	})
}

// readStd reads one final reply with net/http, skipping interim ones as
// its Transport does.
func readStd(br *bufio.Reader, method string) (*http.Response, []byte, error) {
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			return nil, nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == 101 {
			content, err := io.ReadAll(resp.Body)
			return resp, content, err
		}
	}
}
