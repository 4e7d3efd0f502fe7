package browser

import (
	"bufio"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
)

// gRPC-Web's text mode is its binary framing in base64: the request body
// whole, and the response as a run of base64 chunks, each padded, which
// the client decodes four characters at a time. It is what the grpc-web
// JavaScript client sends by default (mode=grpcwebtext), and the only mode
// in which it can read a server stream as it arrives.

const (
	textType   = "application/grpc-web-text"
	binaryType = "application/grpc-web"
)

// GRPCWebText lets next, a gRPC-Web server of the binary mode (connect-go),
// serve text-mode calls too: the request body is decoded on the way in and
// every write of the response encoded on the way out, flushed as next
// flushes it, so that a server stream's messages reach the page as they are
// sent.
func GRPCWebText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		sub, ok := strings.CutPrefix(ct, textType)
		if !ok || sub != "" && sub != "+proto" {
			next.ServeHTTP(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.Header.Set("Content-Type", binaryType+"+proto")
		r2.Header.Del("Content-Length")
		r2.ContentLength = -1
		r2.Body = struct {
			io.Reader
			io.Closer
		}{&base64Reader{r: bufio.NewReader(r.Body)}, r.Body}
		tw := &textWriter{w: w, rc: http.NewResponseController(w)}
		next.ServeHTTP(tw, r2)
	})
}

// base64Reader decodes a text-mode body: base64 chunks, each possibly
// padded, with any whitespace between them ignored.
type base64Reader struct {
	r    *bufio.Reader
	out  []byte // decoded, not yet read
	quad [4]byte
}

func (b *base64Reader) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if err := b.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// next decodes the next four characters into out.
func (b *base64Reader) next() error {
	n := 0
	for n < 4 {
		c, err := b.r.ReadByte()
		if err == io.EOF && n > 0 {
			return io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		b.quad[n] = c
		n++
	}
	var dec [3]byte
	m, err := base64.StdEncoding.Decode(dec[:], b.quad[:])
	if err != nil {
		return err
	}
	b.out = append(b.out[:0], dec[:m]...)
	return nil
}

// textWriter encodes each write of a binary-mode response as its own
// padded base64 chunk.
type textWriter struct {
	w           http.ResponseWriter
	rc          *http.ResponseController
	wroteHeader bool
}

func (t *textWriter) Header() http.Header { return t.w.Header() }

func (t *textWriter) WriteHeader(code int) {
	if t.wroteHeader {
		return
	}
	t.wroteHeader = true
	h := t.w.Header()
	if ct := h.Get("Content-Type"); strings.HasPrefix(ct, binaryType) {
		h.Set("Content-Type", textType+strings.TrimPrefix(ct, binaryType))
	}
	h.Del("Content-Length")
	t.w.WriteHeader(code)
}

func (t *textWriter) Write(p []byte) (int, error) {
	t.WriteHeader(http.StatusOK)
	if len(p) == 0 {
		return 0, nil
	}
	enc := make([]byte, base64.StdEncoding.EncodedLen(len(p)))
	base64.StdEncoding.Encode(enc, p)
	if _, err := t.w.Write(enc); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush sends what was written on, as a server stream needs.
func (t *textWriter) Flush() {
	t.WriteHeader(http.StatusOK)
	_ = t.rc.Flush()
}

// Unwrap gives http.ResponseController the writer beneath.
func (t *textWriter) Unwrap() http.ResponseWriter { return t.w }
