package e2e

import (
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestHTTP2BodyQueuedBehindOtherStreams: over HTTP/2 a request's DATA may
// reach the server well after its HEADERS, queued behind the other
// streams of a busy connection (ticket-master's client keeps thousands on
// each). The body's pace starts with its first bytes, so such a request
// is served, not refused 408 as a slow body.
func TestHTTP2BodyQueuedBehindOtherStreams(t *testing.T) {
	s := start(t, t.TempDir())
	h := dialH2(t, s)
	block := h.headers("PUT", "/v0/entity?id=queued", "application/octet-stream")
	status := make(chan string, 1)
	go func() { status <- responseStatus(h, 1) }()
	if err := h.write(func(fr *http2.Framer) error {
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndHeaders: true})
	}); err != nil {
		t.Fatal(err)
	}
	// Longer than the grace a body has to start arriving from its
	// request's start: the client is busy with its other streams.
	time.Sleep(3 * time.Second)
	if err := h.write(func(fr *http2.Framer) error { return fr.WriteData(1, true, []byte("value")) }); err != nil {
		t.Fatal(err)
	}
	if st := <-status; st != "201" && st != "200" && st != "204" {
		t.Fatalf("a body that came after its connection's other streams: status %q, want it stored", st)
	}
}

// responseStatus reads h's frames until the response headers of stream
// id and returns their :status ("" if the connection ends first).
func responseStatus(h *h2Client, id uint32) string {
	fr := http2.NewFramer(nil, h.c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return ""
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamID == id {
				return f.PseudoValue("status")
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = h.write(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
			}
		}
	}
}
