package cli

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
)

// withPprof serves /debug/pprof/ beside next, to loopback clients or to
// those presenting the API key: profiles reveal internals and cost CPU.
func withPprof(next http.Handler, apiKey string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			next.ServeHTTP(w, r)
			return
		}
		if !fromLoopback(r) && !hasKey(r, apiKey) {
			http.Error(w, "pprof is served to loopback clients or with the API key", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func hasKey(r *http.Request, apiKey string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && apiKey != "" && subtle.ConstantTimeCompare([]byte(got), []byte(apiKey)) == 1
}
