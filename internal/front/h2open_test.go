package front

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
)

// h2Opened dials a front that has a gRPC server behind it (so that it
// must open HTTP/2 connections itself), sends the client's preface and
// SETTINGS, and returns the connection and a framer on it.
func h2Opened(t *testing.T) (net.Conn, *http2.Framer) {
	t.Helper()
	opts := Options{Net: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello") }),
		GRPC: grpc.NewServer(), HeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	c, err := net.Dial("tcp", serveFront(t, New(opts)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	return c, fr
}

// TestHTTP2OpensOnceAndAcknowledgesAtOnce plays a strict client, as
// h2spec is: it waits for the server's SETTINGS and for the
// acknowledgement of its own before it sends a request. The server must
// send both without waiting for a request, and then no second opening:
// exactly one SETTINGS frame without ACK and one with ACK per SETTINGS the
// client sent, even when the client sends another before its request.
func TestHTTP2OpensOnceAndAcknowledgesAtOnce(t *testing.T) {
	c, fr := h2Opened(t)
	settings, acks := 0, 0
	for settings == 0 || acks == 0 {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's opening: %v", err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && sf.IsAck() {
			acks++
		} else if ok {
			settings++
		}
	}
	// Acknowledge, change a setting and ask, all at once: a server that
	// answered both SETTINGS with one acknowledgement would leave one
	// unanswered.
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "front"}, {":path", "/"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	var batch bytes.Buffer
	bf := http2.NewFramer(&batch, nil)
	_ = bf.WriteSettingsAck()
	_ = bf.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 2 << 20})
	_ = bf.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	if _, err := c.Write(batch.Bytes()); err != nil {
		t.Fatal(err)
	}
	for ended := false; !ended || acks < 2; {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the reply (SETTINGS %d, acknowledgements %d): %v", settings, acks, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				acks++
			} else {
				settings++
			}
		case *http2.DataFrame:
			ended = ended || f.StreamEnded()
		case *http2.MetaHeadersFrame:
			ended = ended || f.StreamEnded()
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v", f.ErrCode)
		}
	}
	if settings != 1 || acks != 2 {
		t.Errorf("the server sent %d SETTINGS and %d acknowledgements; want 1 and 2", settings, acks)
	}
}

// TestOpeningSettingsHoldForGRPC checks the front's SETTINGS against what
// grpc-go's server enforces until its own SETTINGS arrive: RFC 9113's
// frame size and stream window (grpc-go's defaults), the stream limit, and
// no extended CONNECT.
func TestOpeningSettingsHoldForGRPC(t *testing.T) {
	srv := New(Options{Net: http.NotFoundHandler(), Limits: Limits{MaxStreams: 9}})
	b, err := openingSettings(srv.slow)
	if err != nil {
		t.Fatal(err)
	}
	f, err := http2.NewFramer(nil, bytes.NewReader(b)).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		t.Fatalf("the opening is %v, want SETTINGS", f.Header())
	}
	want := map[http2.SettingID]uint32{
		http2.SettingMaxFrameSize:         16 << 10,
		http2.SettingInitialWindowSize:    64<<10 - 1,
		http2.SettingMaxConcurrentStreams: 9,
		http2.SettingHeaderTableSize:      4096,
	}
	for id, v := range want {
		if got, ok := sf.Value(id); !ok || got != v {
			t.Errorf("%v = %d (sent: %v), want %d", id, got, ok, v)
		}
	}
	if _, ok := sf.Value(http2.SettingEnableConnectProtocol); ok {
		t.Error("the opening offers extended CONNECT, which grpc-go does not serve")
	}
}
