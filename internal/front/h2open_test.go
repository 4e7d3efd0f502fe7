package front

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
)

// h2Opened dials a front of opts, which should have a gRPC server behind
// it (so that the front must open HTTP/2 connections itself), sends the client's preface and
// SETTINGS, and returns the connection and a framer on it.
func h2Opened(t *testing.T, opts Options) (net.Conn, *http2.Framer) {
	t.Helper()
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
	opts := Options{Net: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello") }),
		GRPC: grpc.NewServer(), HeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	c, fr := h2Opened(t, opts)
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
	var batch bytes.Buffer
	bf := http2.NewFramer(&batch, nil)
	_ = bf.WriteSettingsAck()
	_ = bf.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 2 << 20})
	_ = bf.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: newRequestEncoder().encode("GET", "/", ""), EndStream: true, EndHeaders: true})
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
	for _, server := range []HTTP2Server{HTTP2Surge, HTTP2Net} {
		srv := New(Options{Net: http.NotFoundHandler(), Limits: Limits{MaxStreams: 9}, HTTP2: server})
		b, err := srv.openingSettings()
		if err != nil {
			t.Fatal(err)
		}
		f, err := http2.NewFramer(nil, bytes.NewReader(b)).ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		sf, ok := f.(*http2.SettingsFrame)
		if !ok || sf.IsAck() {
			t.Fatalf("%s: the opening is %v, want SETTINGS", server, f.Header())
		}
		want := map[http2.SettingID]uint32{
			http2.SettingMaxFrameSize:         16 << 10,
			http2.SettingInitialWindowSize:    64<<10 - 1,
			http2.SettingMaxConcurrentStreams: 9,
			http2.SettingHeaderTableSize:      4096,
		}
		for id, v := range want {
			if got, ok := sf.Value(id); !ok || got != v {
				t.Errorf("%s: %v = %d (sent: %v), want %d", server, id, got, ok, v)
			}
		}
		if _, ok := sf.Value(http2.SettingEnableConnectProtocol); ok {
			t.Errorf("%s: the opening offers extended CONNECT, which grpc-go does not serve", server)
		}
	}
}

// TestHTTP2RefusalsKeepTheConnection plays Go's HTTP/2 client against
// refusals that come before the request body is sent: it sends a
// request's headers, gets the refusal (the body unread) and resets the
// answered stream with NO_ERROR, as Go's client does when the answer beats
// the end of its body. Many times over on one connection, far past the
// rapid-reset guard's burst: the connection must live on, neither told to
// go away for the first refusal (net/http reads a Connection: close header
// as GOAWAY) nor taken for a rapid reset, since answered streams cost the
// server nothing more. Refused as too large (413) before the body is
// sent, and as overloaded (503), which a client that queues past the
// stream limit meets: work is taken once a body is whole, so that one
// comes on a request without a body.
func TestHTTP2RefusalsKeepTheConnection(t *testing.T) {
	for _, tc := range []struct {
		name          string
		limits        Limits
		contentLength string // "": no body, the request ends with its headers
		status        string
	}{
		{"too_large", Limits{MaxStreams: 5}, "10", "413"},
		{"overloaded", Limits{MaxStreams: 5, MaxWork: 1}, "", "503"}, // a held stream takes the one unit
	} {
		t.Run(tc.name, func(t *testing.T) {
			hold, holding := make(chan struct{}), make(chan struct{})
			defer close(hold)
			held := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { close(holding); <-hold })
			small := Route{Pattern: "POST /small", MaxBody: 1, Handler: func(ctx *fasthttp.RequestCtx) {}}
			opts := Options{Net: held, Routes: []Route{small}, GRPC: grpc.NewServer(),
				Limits: tc.limits, HeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
			_, fr := h2Opened(t, opts)
			enc := newRequestEncoder()
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc.encode("GET", "/hold", ""), EndStream: true, EndHeaders: true}); err != nil {
				t.Fatal(err)
			}
			<-holding            // its unit of work taken
			const refusals = 200 // the guard's burst is 4 × MaxStreams
			for i := range refusals {
				id := uint32(2*i + 3)
				if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: enc.encode("POST", "/small", tc.contentLength), EndStream: tc.contentLength == "", EndHeaders: true}); err != nil {
					t.Fatalf("refusal %d: %v", i, err)
				}
				if status := awaitEnd(t, fr, id); status != tc.status {
					t.Fatalf("refusal %d: status %s, want %s", i, status, tc.status)
				}
				if err := fr.WriteRSTStream(id, http2.ErrCodeNo); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// requestEncoder encodes request header blocks with one HPACK context.
type requestEncoder struct {
	buf bytes.Buffer
	enc *hpack.Encoder
}

func newRequestEncoder() *requestEncoder {
	e := new(requestEncoder)
	e.enc = hpack.NewEncoder(&e.buf)
	return e
}

// encode returns the header block of a request; contentLength "" sends
// none.
func (e *requestEncoder) encode(method, path, contentLength string) []byte {
	e.buf.Reset()
	fields := [][2]string{{":method", method}, {":scheme", "http"}, {":authority", "front"}, {":path", path}}
	if contentLength != "" {
		fields = append(fields, [2]string{"content-length", contentLength})
	}
	for _, f := range fields {
		_ = e.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return bytes.Clone(e.buf.Bytes())
}

// awaitEnd reads frames until the server ends stream id and returns the
// answer's status; a GOAWAY fails the test.
func awaitEnd(t *testing.T, fr *http2.Framer, id uint32) (status string) {
	t.Helper()
	return awaitEnds(t, fr, id)[id]
}

// awaitEnds reads frames until the server has ended every stream of ids,
// in any order, and returns their answers' statuses; a GOAWAY fails the
// test.
func awaitEnds(t *testing.T, fr *http2.Framer, ids ...uint32) map[uint32]string {
	t.Helper()
	status := make(map[uint32]string, len(ids))
	open := make(map[uint32]bool, len(ids))
	for _, id := range ids {
		open[id] = true
	}
	for len(open) > 0 {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("streams %v: %v", ids, err)
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			t.Fatalf("streams %v: GOAWAY %v %q", ids, f.ErrCode, f.DebugData())
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if open[f.StreamID] {
				status[f.StreamID] = f.PseudoValue("status")
			}
		case *http2.RSTStreamFrame:
			if open[f.StreamID] {
				status[f.StreamID] = "RST_STREAM " + f.ErrCode.String()
				delete(open, f.StreamID)
			}
		}
		if open[f.Header().StreamID] && f.Header().Flags.Has(http2.FlagDataEndStream) {
			delete(open, f.Header().StreamID)
		}
	}
	return status
}

// TestHTTP2ErrorsCounted: a stream past the advertised limit is refused
// and counted by kind in surge_front_http2_errors_total, by either
// server: surge's refuses it with REFUSED_STREAM, net/http's with
// PROTOCOL_ERROR.
func TestHTTP2ErrorsCounted(t *testing.T) {
	kinds := map[HTTP2Server]string{
		HTTP2Surge: "stream_REFUSED_STREAM_over_max_streams",
		HTTP2Net:   "stream_PROTOCOL_ERROR_over_max_streams",
	}
	for server, kind := range kinds {
		reg := prometheus.NewRegistry()
		hold := make(chan struct{})
		opts := Options{Net: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hold }), GRPC: grpc.NewServer(),
			Limits: Limits{MaxStreams: 1}, Registerer: reg, HeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute, HTTP2: server}
		_, fr := h2Opened(t, opts)
		_ = fr.WriteSettingsAck()
		enc := newRequestEncoder()
		for _, id := range []uint32{1, 3} {
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: enc.encode("GET", "/", ""), EndStream: true, EndHeaders: true}); err != nil {
				t.Fatal(err)
			}
		}
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			if rst, ok := f.(*http2.RSTStreamFrame); ok && rst.StreamID == 3 {
				break
			}
		}
		close(hold)
		if n := counted(t, reg, "surge_front_http2_errors_total", kind); n != 1 {
			t.Errorf(`%s: surge_front_http2_errors_total{kind=%q} = %v, want 1`, server, kind, n)
		}
	}
}

// counted reads the counter name{kind} from reg (0 if absent).
func counted(t *testing.T, reg *prometheus.Registry, name, kind string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
