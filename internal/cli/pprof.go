package cli

import (
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/surge-dev/surge/internal/telemetry"
)

// withPprof serves /debug/pprof/ beside next, to operators only (loopback
// clients or those presenting the API key): profiles reveal internals and
// cost CPU.
func withPprof(next http.Handler, apiKey string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	profiles := telemetry.OperatorOnly(mux, apiKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			next.ServeHTTP(w, r)
			return
		}
		profiles.ServeHTTP(w, r)
	})
}
