package lifecycle

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// While the storage recovers (Pebble replays its WAL, the workloads load
// their state), the port is already open: a small server answers /healthz
// 200, /readyz 503 saying how long recovery has run, and everything else
// 503, so that load balancers and clients see a server that is starting
// rather than a refused connection. The real server takes the listener
// over once recovery is done.

// Starting is the server of the recovery phase.
type Starting struct {
	srv   *http.Server
	ln    *net.TCPListener
	began time.Time
	done  chan struct{}
}

// ServeStarting answers on ln (with TLS tc, if not nil) until Stop is
// called, logging recovery's progress every few seconds.
func ServeStarting(ln net.Listener, tc *tls.Config, log *slog.Logger) (*Starting, error) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil, fmt.Errorf("listener %T cannot be handed over after recovery", ln)
	}
	s := &Starting{ln: tl, began: time.Now(), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprint(w, "ok\n") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("not ready: recovering storage for %v", time.Since(s.began).Round(time.Millisecond)), http.StatusServiceUnavailable)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	var l net.Listener = handover{tl}
	if tc != nil {
		// tls.NewListener's own connections, which net/http recognises
		// to serve HTTP/2 to the clients that chose it by ALPN.
		l = tls.NewListener(l, tc)
	}
	go func() { _ = s.srv.Serve(l) }()
	go s.progress(log)
	return s, nil
}

// progress says every few seconds that recovery goes on.
func (s *Starting) progress(log *slog.Logger) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			log.Info("recovering storage: not ready yet", "elapsed", time.Since(s.began).Round(time.Millisecond))
		case <-s.done:
			return
		}
	}
}

// Stop ends the recovery server, leaving the listener open for the real
// one, and logs how long recovery took.
func (s *Starting) Stop(log *slog.Logger) error {
	close(s.done)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("storage recovered", "elapsed", time.Since(s.began).Round(time.Millisecond))
	return s.ln.SetDeadline(time.Time{})
}

// handover is the recovery server's view of the listener: closing it only
// interrupts Accept, so that the real server can accept on it next.
type handover struct{ *net.TCPListener }

func (h handover) Close() error { return h.SetDeadline(time.Now()) }
