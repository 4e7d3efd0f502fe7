package lifecycle

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

// The recovery server answers on the port while the storage recovers, and
// hands the same listener to the real server afterwards.
func TestStartingServerHandsOverTheListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := ServeStarting(ln, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	status, body := get(t, hc, base+"/readyz")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "recovering storage") {
		t.Fatalf("/readyz while recovering: %d %q", status, body)
	}
	if status, _ := get(t, hc, base+"/healthz"); status != http.StatusOK {
		t.Fatalf("/healthz while recovering: %d", status)
	}
	if err := s.Stop(log); err != nil {
		t.Fatal(err)
	}
	real := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ready") })}
	go func() { _ = real.Serve(ln) }()
	defer real.Close()
	if status, body := get(t, hc, base+"/readyz"); status != http.StatusOK || body != "ready" {
		t.Fatalf("after the hand-over: %d %q", status, body)
	}
}

func get(t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
