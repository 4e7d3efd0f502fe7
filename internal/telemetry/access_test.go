package telemetry

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestOperatorOnly(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	withKey, noKey := OperatorOnly(ok, "s3cret"), OperatorOnly(ok, "")
	cases := []struct {
		name   string
		h      http.Handler
		remote string
		auth   func(*http.Request)
		want   int
	}{
		{"loopback v4", withKey, "127.0.0.1:5000", nil, http.StatusTeapot},
		{"loopback v6", noKey, "[::1]:5000", nil, http.StatusTeapot},
		{"remote without key", withKey, "203.0.113.9:5000", nil, http.StatusUnauthorized},
		{"remote with bearer", withKey, "203.0.113.9:5000", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret") }, http.StatusTeapot},
		{"remote with basic", withKey, "203.0.113.9:5000", func(r *http.Request) { r.SetBasicAuth("anyone", "s3cret") }, http.StatusTeapot},
		{"remote with wrong key", withKey, "203.0.113.9:5000", func(r *http.Request) { r.SetBasicAuth("anyone", "s3cret!") }, http.StatusUnauthorized},
		{"remote, server without key", noKey, "203.0.113.9:5000", func(r *http.Request) { r.Header.Set("Authorization", "Bearer ") }, http.StatusUnauthorized},
		{"unparsable remote", withKey, "somewhere", nil, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		if tc.auth != nil {
			tc.auth(r)
		}
		w := httptest.NewRecorder()
		tc.h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
		if w.Code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate: a browser would not ask for the key", tc.name)
		}
	}
}
