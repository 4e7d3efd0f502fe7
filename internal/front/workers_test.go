package front

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// A request that finds every worker busy runs at once on its own
// goroutine rather than waiting for one.
func TestHandlerWorkersNeverQueue(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	p := onWorkers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	}), 1)
	defer p.stop()
	held := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/hold", nil))
		held <- rec.Code
	}()
	<-entered
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/other", nil))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("a request beside a busy worker: %d", rec.Code)
	}
	close(release)
	if code := <-held; code != http.StatusNoContent {
		t.Fatalf("the held request: %d", code)
	}
}

// A handler's panic reaches the goroutine net/http called, which recovers
// it, and the worker lives on; after stop, requests are still served.
func TestHandlerWorkersRaisePanicsAndStop(t *testing.T) {
	p := onWorkers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic(http.ErrAbortHandler)
		}
		w.WriteHeader(http.StatusNoContent)
	}), 1)
	for range 3 {
		func() {
			defer func() {
				if v := recover(); v != http.ErrAbortHandler {
					t.Fatalf("recovered %v, want the handler's panic", v)
				}
			}()
			p.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/panic", nil))
		}()
	}
	p.stop()
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("after stop: %d", rec.Code)
	}
}
