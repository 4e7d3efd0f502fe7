package telemetry

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzRequestIDHeader: whatever a client sends as X-Request-Id, the reply
// echoes it only if it is a safe id, and a 5xx reply always carries a safe
// one.
func FuzzRequestIDHeader(f *testing.F) {
	for _, seed := range []string{"abc-123", "", "with space", "x\r\nSet-Cookie: a=b", "ünï", string(make([]byte, 65))} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, id string, fail bool) {
		h := NewMiddleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if fail {
				w.WriteHeader(http.StatusInternalServerError)
			}
		}), MiddlewareOptions{})
		r := httptest.NewRequest("GET", "/v1/transfers/x", nil)
		r.Header[RequestIDHeader] = []string{id}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		got := w.Header().Get(RequestIDHeader)
		switch {
		case got != "" && !validRequestID(got):
			t.Fatalf("reply carries unsafe id %q", got)
		case validRequestID(id) && got != id:
			t.Fatalf("valid id %q echoed as %q", id, got)
		case fail && got == "":
			t.Fatal("5xx reply without an id")
		}
	})
}
