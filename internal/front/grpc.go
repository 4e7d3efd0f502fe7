package front

import (
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// GRPCServer serves whole connections of gRPC over HTTP/2: *grpc.Server.
type GRPCServer interface {
	Serve(net.Listener) error
	// GracefulStop stops accepting and waits for the calls in progress;
	// Stop ends them.
	GracefulStop()
	Stop()
}

// A prior-knowledge HTTP/2 connection names its first request only in a
// HEADERS frame, after the client's preface and SETTINGS. grpc-go clients
// send nothing more until the server has sent its own SETTINGS, so the
// sniffer sends a SETTINGS frame first, then reads frames up to the first
// request's headers. It carries the one setting both servers advertise
// the same way, the stream limit (Limits.MaxStreams), and no other: a
// client reads a first SETTINGS without it as "many streams" (Go's: 1,000)
// and would open that many before the server's own SETTINGS come, to have
// those past the limit refused (REFUSED_STREAM).
//
// The client acknowledges those SETTINGS. grpc-go ignores acknowledgements,
// but net/http counts them and rejects one it never asked for, so for a
// connection net/http serves the sniffer also waits for that
// acknowledgement and cuts it from the bytes it replays.

// streamSettings is a SETTINGS frame of MAX_CONCURRENT_STREAMS alone.
func streamSettings(maxStreams uint32) []byte {
	return []byte{0, 0, 6, 4, 0, 0, 0, 0, 0, // length 6, SETTINGS, no flags, stream 0
		0, byte(http2.SettingMaxConcurrentStreams),
		byte(maxStreams >> 24), byte(maxStreams >> 16), byte(maxStreams >> 8), byte(maxStreams)}
}

// maxHTTP2Sniff bounds what the sniffer reads of a connection's opening:
// the preface, a few control frames and one request's headers.
const maxHTTP2Sniff = 64 << 10

var errSniffTooLong = errors.New("front: HTTP/2 opening too long to route")

// sniffHTTP2 routes a connection that began with the HTTP/2 preface (head
// holds what was read of it). It reports whether the first request is
// gRPC and returns the bytes to replay to the server that serves it. On an
// error the connection is not worth serving: it timed out, closed, or broke
// the protocol before its first request was known.
func sniffHTTP2(c net.Conn, head []byte, timeout time.Duration, maxStreams uint32) (replay []byte, isGRPC bool, err error) {
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := c.Write(streamSettings(maxStreams)); err != nil {
		return nil, false, err
	}
	r := &sniffReader{c: c, buf: head}
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(r, preface); err != nil {
		return nil, false, err
	}
	if string(preface) != http2.ClientPreface {
		return nil, false, errors.New("front: malformed HTTP/2 preface")
	}
	fr := http2.NewFramer(nil, r)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.MaxHeaderListSize = maxHTTP2Sniff
	decided, ack := false, [2]int{-1, -1}
	for !decided || !isGRPC && ack[0] < 0 {
		start := r.pos
		f, err := fr.ReadFrame()
		if err != nil {
			return nil, false, err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() && ack[0] < 0 {
				ack = [2]int{start, r.pos}
			}
		case *http2.MetaHeadersFrame:
			if !decided {
				decided, isGRPC = true, isGRPCRequest(f)
			}
		case *http2.WindowUpdateFrame, *http2.PriorityFrame, *http2.PingFrame:
		default:
			decided = true
		}
	}
	if isGRPC {
		return r.buf, true, nil
	}
	return append(r.buf[:ack[0]:ack[0]], r.buf[ack[1]:]...), false, nil
}

// isGRPCRequest reports whether h opens a gRPC call (not gRPC-Web, which
// connect-go serves).
func isGRPCRequest(h *http2.MetaHeadersFrame) bool {
	for _, f := range h.RegularFields() {
		if f.Name == "content-type" {
			return strings.HasPrefix(f.Value, "application/grpc") && !strings.HasPrefix(f.Value, "application/grpc-web")
		}
	}
	return false
}

// sniffReader reads c, keeping everything read in buf; pos is how much of
// buf the reader has given out.
type sniffReader struct {
	c   net.Conn
	buf []byte
	pos int
}

func (r *sniffReader) Read(p []byte) (int, error) {
	if r.pos == len(r.buf) {
		if len(r.buf) >= maxHTTP2Sniff {
			return 0, errSniffTooLong
		}
		r.buf = append(r.buf, make([]byte, 4096)...)[:len(r.buf)]
		n, err := r.c.Read(r.buf[len(r.buf):min(cap(r.buf), maxHTTP2Sniff)])
		r.buf = r.buf[:len(r.buf)+n]
		if n == 0 {
			return 0, err
		}
	}
	n := copy(p, r.buf[r.pos:])
	r.pos += n
	return n, nil
}
