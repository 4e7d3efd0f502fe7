package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestAbuseHPACKBomb: one HTTP/2 connection's headers, on many streams
// that never send a body, made to cost the server far more than they
// cost the client: on gRPC a 4 KB -bin header put into the HPACK table
// once and named with one byte thousands of times a stream (grpc-go
// decodes each reference's base64 again); on net/http a header of
// almost 1 MB a stream, which its default header list size takes. The
// server's peak RSS stays under --memory-limit-mb + 256 MiB.
func TestAbuseHPACKBomb(t *testing.T) {
	const limitMiB = 128
	for _, tc := range []struct {
		name, contentType string
		conns, streams    int
		refs, literal     int // references to the 4 KB header; bytes of one literal header
	}{
		{name: "grpc", contentType: "application/grpc", conns: 1, streams: 100, refs: 4000},
		{name: "net_http", contentType: "application/grpc-web+proto", conns: 2, streams: 249, literal: 1_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, t.TempDir(), "--memory-limit-mb", strconv.Itoa(limitMiB))
			for range tc.conns {
				bomb(t, s, tc.contentType, tc.streams, tc.refs, tc.literal)
			}
			peak := peakRSSMiB(t, s.cmd.Process.Pid)
			t.Logf("peak RSS after %d connections of %d such streams: %d MiB", tc.conns, tc.streams, peak)
			if peak > limitMiB+256 {
				t.Fatalf("peak RSS %d MiB, over --memory-limit-mb %d + 256", peak, limitMiB)
			}
		})
	}
}

// bomb opens a connection, routes it with a plain call of the wallet's
// Login, then sends streams streams whose headers name a 4 KB -bin value
// refs times, or carry a header of literal bytes, and returns once the
// server has read them all (it answers a PING sent after them) or has
// closed the connection.
func bomb(t *testing.T, s *server, contentType string, streams, refs, literal int) {
	t.Helper()
	const path = "/surge.wallet.v1.AuthService/Login"
	h := dialH2(t, s)
	_ = h.c.SetDeadline(time.Now().Add(startTimeout)) // a bound on the wait, not a threshold
	plain := h.headers("POST", path, contentType)
	if err := h.write(func(fr *http2.Framer) error {
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: plain, EndHeaders: true})
	}); err != nil {
		t.Fatal(err)
	}
	value, big := strings.Repeat("QUFB", 1000), strings.Repeat("x", literal)
	for i := range streams {
		h.block.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "surge"}, {":path", path}, {"content-type", contentType}} {
			_ = h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1], Sensitive: true}) // never indexed
		}
		for range refs { // the first is indexed, the rest name it
			_ = h.enc.WriteField(hpack.HeaderField{Name: "x-a-bin", Value: value})
		}
		if literal > 0 {
			_ = h.enc.WriteField(hpack.HeaderField{Name: "x-big", Value: big, Sensitive: true})
		}
		block := h.block.Bytes()
		id := uint32(2*i + 3)
		if err := h.write(func(fr *http2.Framer) error { return writeHeaderBlock(fr, id, block) }); err != nil {
			t.Logf("the server closed the connection at stream %d: %v", id, err)
			return
		}
	}
	ping := [8]byte{'h', 'p', 'a', 'c', 'k'}
	got := make(chan bool, 1)
	go func() {
		_, pinged := h.frames(ping)
		got <- pinged
	}()
	_ = h.write(func(fr *http2.Framer) error { return fr.WritePing(false, ping) })
	if !<-got {
		t.Log("the server closed the connection before the PING after the bomb")
	}
}

// writeHeaderBlock sends block as a HEADERS frame and as many
// CONTINUATION frames as it needs, leaving the stream open.
func writeHeaderBlock(fr *http2.Framer, id uint32, block []byte) error {
	const most = 16 << 10 // the default SETTINGS_MAX_FRAME_SIZE
	first := block[:min(len(block), most)]
	block = block[len(first):]
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(block) == 0}); err != nil {
		return err
	}
	for len(block) > 0 {
		next := block[:min(len(block), most)]
		block = block[len(next):]
		if err := fr.WriteContinuation(id, len(block) == 0, next); err != nil {
			return err
		}
	}
	return nil
}

// TestAbuseGRPCSilentStream: a gRPC call whose request message never
// comes is ended by the server once --body-timeout is over, rather than
// held for as long as the client likes.
func TestAbuseGRPCSilentStream(t *testing.T) {
	s := start(t, t.TempDir(), "--body-timeout", "1s")
	h := dialH2(t, s)
	block := h.headers("POST", "/surge.wallet.v1.AuthService/Login", "application/grpc")
	if err := h.write(func(fr *http2.Framer) error {
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndHeaders: true})
	}); err != nil {
		t.Fatal(err)
	}
	_ = h.c.SetReadDeadline(time.Now().Add(startTimeout)) // a bound on the wait, not a threshold
	fr := http2.NewFramer(nil, h.c)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("the silent call was not ended: %v", err)
		}
		if f.Header().StreamID != 1 {
			continue
		}
		if _, ok := f.(*http2.RSTStreamFrame); ok || f.Header().Flags.Has(http2.FlagHeadersEndStream) {
			return
		}
	}
}
