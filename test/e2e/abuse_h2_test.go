package e2e

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Client speaks HTTP/2 with prior knowledge, frame by frame.
type h2Client struct {
	t     *testing.T
	c     net.Conn
	fr    *http2.Framer
	enc   *hpack.Encoder
	block bytes.Buffer
	mu    sync.Mutex // orders the framer's writes
	// openingStreams is the stream limit of the server's first SETTINGS
	// (0: none).
	openingStreams uint32
}

// write calls w with the framer, one writer at a time.
func (h *h2Client) write(w func(fr *http2.Framer) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return w(h.fr)
}

func dialH2(t *testing.T, s *server) *h2Client {
	t.Helper()
	c, _ := dialRaw(t, s.url)
	t.Cleanup(func() { _ = c.Close() })
	h := &h2Client{t: t, c: c, fr: http2.NewFramer(c, c)}
	h.enc = hpack.NewEncoder(&h.block)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := h.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// Acknowledge the server's first SETTINGS before anything else, as a
	// client that waits for the server's preface does.
	f, err := http2.NewFramer(nil, c).ReadFrame()
	sf, ok := f.(*http2.SettingsFrame)
	if err != nil || !ok || sf.IsAck() {
		t.Fatalf("the server's first frame: %v %v, want SETTINGS", f, err)
	}
	h.openingStreams, _ = sf.Value(http2.SettingMaxConcurrentStreams)
	if err := h.fr.WriteSettingsAck(); err != nil {
		t.Fatal(err)
	}
	return h
}

// headers encodes a request's header block.
func (h *h2Client) headers(method, path, contentType string) []byte {
	h.block.Reset()
	for _, f := range [][2]string{{":method", method}, {":scheme", "http"}, {":authority", "surge"}, {":path", path}, {"content-type", contentType}, {"te", "trailers"}} {
		_ = h.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return bytes.Clone(h.block.Bytes())
}

// frames reads frames until the connection ends and reports whether a
// GOAWAY came, with its code, and whether the ack of the PING with data
// ping arrived before it.
func (h *h2Client) frames(ping [8]byte) (goAway *http2.GoAwayFrame, pinged bool) {
	fr := http2.NewFramer(nil, h.c)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return nil, pinged
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			cp := *f
			return &cp, pinged
		case *http2.PingFrame:
			if f.IsAck() && f.Data == ping {
				return nil, true
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = h.write(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
			}
		}
	}
}

// TestAbuseRapidReset: a burst of HEADERS+RST_STREAM pairs
// (CVE-2023-44487) on one connection gets a GOAWAY ENHANCE_YOUR_CALM, on
// the gRPC server's connections and on net/http's. A PING sent after the
// burst tells the end of it: a server that answers it first took the
// whole burst.
func TestAbuseRapidReset(t *testing.T) {
	s := start(t, t.TempDir())
	for _, tc := range []struct{ name, path, contentType string }{
		{"grpc", "/surge.wallet.v1.WalletService/Balance", "application/grpc"},
		{"net_http", "/healthz", "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const pairs = 20000
			h := dialH2(t, s)
			block := h.headers("GET", tc.path, tc.contentType)
			r := h.burst(pairs, block, func(fr *http2.Framer, id uint32) error { return fr.WriteRSTStream(id, http2.ErrCodeCancel) })
			if r.goAway == nil {
				t.Fatalf("%d HEADERS+RST_STREAM pairs sent, no GOAWAY (PING answered after the burst: %v)", r.sent, r.pinged)
			}
			if r.goAway.ErrCode != http2.ErrCodeEnhanceYourCalm {
				t.Fatalf("GOAWAY %v, want ENHANCE_YOUR_CALM", r.goAway.ErrCode)
			}
			t.Logf("GOAWAY %v after %d of %d pairs sent", r.goAway.ErrCode, r.sent, pairs)
		})
	}
	if n := metric(t, s, `surge_front_rejected_total{reason="rapid_reset"}`); n != 2 {
		t.Fatalf(`surge_front_rejected_total{reason="rapid_reset"} = %v, want 2`, n)
	}
}

// burstResult is how a burst ended: the server's GOAWAY, if any, whether
// the PING sent after the burst was answered, and how many pairs were
// sent before the server closed the connection.
type burstResult struct {
	goAway *http2.GoAwayFrame
	pinged bool
	sent   int
}

// burst opens pairs streams with block, following each with second's
// frame, then sends a PING, and reads the server's frames until the
// PING's answer, a GOAWAY or the connection's end.
func (h *h2Client) burst(pairs int, block []byte, second func(fr *http2.Framer, id uint32) error) burstResult {
	ping := [8]byte{'b', 'u', 'r', 's', 't'}
	got := make(chan burstResult, 1)
	go func() {
		g, p := h.frames(ping)
		got <- burstResult{goAway: g, pinged: p}
	}()
	sent := 0
	for i := range pairs {
		id := uint32(2*i + 1)
		if h.write(func(fr *http2.Framer) error {
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true}); err != nil {
				return err
			}
			return second(fr, id)
		}) != nil {
			break // the server closed the connection
		}
		sent++
	}
	_ = h.write(func(fr *http2.Framer) error { return fr.WritePing(false, ping) })
	r := <-got
	r.sent = sent
	return r
}

// TestAbuseStreamLimit: the gRPC server and net/http's HTTP/2 both
// advertise a bound on a connection's concurrent streams (--max-streams):
// net/http in the connection's opening, which the front sends as net/http
// would, grpc-go in SETTINGS of its own after it.
func TestAbuseStreamLimit(t *testing.T) {
	s := start(t, t.TempDir(), "--max-streams", "100")
	for _, tc := range []struct {
		name, path, contentType string
		inOpening               bool
	}{
		{"grpc", "/surge.wallet.v1.WalletService/Balance", "application/grpc", false},
		{"net_http", "/healthz", "application/json", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := dialH2(t, s)
			if tc.inOpening {
				if h.openingStreams != 100 {
					t.Fatalf("the opening's SETTINGS_MAX_CONCURRENT_STREAMS = %d (0: none), want 100", h.openingStreams)
				}
				return
			}
			block := h.headers("GET", tc.path, tc.contentType)
			ping := [8]byte{'l', 'i', 'm', 'i', 't'}
			advertised := make(chan uint32, 1)
			go func() {
				fr := http2.NewFramer(nil, h.c)
				for {
					f, err := fr.ReadFrame()
					if err != nil {
						advertised <- 0
						return
					}
					if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
						_ = h.write(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
						if v, ok := sf.Value(http2.SettingMaxConcurrentStreams); ok {
							advertised <- v
							return
						}
					}
					if pf, ok := f.(*http2.PingFrame); ok && pf.IsAck() && pf.Data == ping {
						advertised <- 0
						return
					}
				}
			}()
			_ = h.write(func(fr *http2.Framer) error {
				return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndHeaders: true, EndStream: true})
			})
			_ = h.write(func(fr *http2.Framer) error { return fr.WritePing(false, ping) })
			if v := <-advertised; v != 100 {
				t.Fatalf("SETTINGS_MAX_CONCURRENT_STREAMS = %d (0: none advertised), want 100", v)
			}
		})
	}
}

// TestAbuseSlowBodyNetHTTP: a body that never arrives on the net/http
// path (the wallet's Connect and gRPC-Web routes) is cut at --body-timeout
// rather than held for as long as the client likes.
func TestAbuseSlowBodyNetHTTP(t *testing.T) {
	s := start(t, t.TempDir(), "--body-timeout", "1s")
	rc := openRaw(t, s)
	rc.send("POST /surge.wallet.v1.WalletService/Balance HTTP/1.1\r\nHost: surge\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	resp, body, err := rc.reply()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server still held the slow body when the client gave up: %v", err)
	}
	if err == nil && resp.StatusCode < 400 {
		t.Fatalf("a body that never came: %s %s", resp.Status, body)
	}
}

// TestAbuseGRPCWindowOverflow: two WINDOW_UPDATEs of 2³¹−1 on a gRPC
// connection grow its window past the largest allowed: the server answers
// GOAWAY FLOW_CONTROL_ERROR (RFC 9113 §6.9.1), as net/http does.
func TestAbuseGRPCWindowOverflow(t *testing.T) {
	s := start(t, t.TempDir())
	h := dialH2(t, s)
	block := h.headers("POST", "/surge.wallet.v1.AuthService/Login", "application/grpc")
	ping := [8]byte{'w', 'i', 'n', 'd', 'o', 'w'}
	got := make(chan *http2.GoAwayFrame, 1)
	go func() {
		g, _ := h.frames(ping)
		got <- g
	}()
	_ = h.write(func(fr *http2.Framer) error {
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndHeaders: true}); err != nil {
			return err
		}
		for range 2 {
			if err := fr.WriteWindowUpdate(0, 1<<31-1); err != nil {
				return err
			}
		}
		return fr.WritePing(false, ping)
	})
	g := <-got
	if g == nil || g.ErrCode != http2.ErrCodeFlowControl {
		t.Fatalf("GOAWAY %v, want FLOW_CONTROL_ERROR", g)
	}
}

// TestAbuseMadeYouReset: HEADERS followed by a WINDOW_UPDATE of 0 on the
// same stream makes the server reset the stream itself (the MadeYouReset
// shape, CVE-2025-8671), so the client never sends a RST_STREAM; a burst
// of them on one connection gets GOAWAY ENHANCE_YOUR_CALM all the same
// (or, mid-frame, the connection closed), on the gRPC server's connections
// and on net/http's.
func TestAbuseMadeYouReset(t *testing.T) {
	s := start(t, t.TempDir())
	for _, tc := range []struct{ name, contentType string }{
		{"grpc", "application/grpc"}, {"net_http", "application/grpc-web+proto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const pairs = 20000
			h := dialH2(t, s)
			h.fr.AllowIllegalWrites = true // an increment of 0
			block := h.headers("POST", "/surge.wallet.v1.AuthService/Login", tc.contentType)
			r := h.burst(pairs, block, func(fr *http2.Framer, id uint32) error { return fr.WriteWindowUpdate(id, 0) })
			// A GOAWAY cannot follow a frame the server has only begun to
			// write; then the connection just ends.
			if r.goAway != nil && r.goAway.ErrCode != http2.ErrCodeEnhanceYourCalm || r.goAway == nil && r.pinged {
				t.Fatalf("GOAWAY %v (PING after the burst answered: %v), want ENHANCE_YOUR_CALM or the connection closed", r.goAway, r.pinged)
			}
		})
	}
}
