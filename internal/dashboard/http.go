package dashboard

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"

	"github.com/surge-dev/surge/internal/front"
)

//go:embed assets
var assets embed.FS

// pageSecurity keeps the page from loading or sending anything beyond this
// server: the dashboard must work with no network, and this proves it.
const pageSecurity = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"

// Handler serves the page at "/" and everything else under /ui/: the
// assets, /ui/state (the current frame as JSON) and /ui/events (the
// stream). Mount it for exactly "/" and the /ui/ subtree.
func (d *Dashboard) Handler() http.Handler {
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic("dashboard: embedded assets: " + err.Error()) // cannot happen: the directory is embedded
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", pageSecurity)
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.Handle("GET /ui/", noCache(http.StripPrefix("/ui/", http.FileServerFS(static))))
	mux.HandleFunc("GET /ui/state", d.serveState)
	mux.HandleFunc("GET /ui/events", d.serveEvents)
	return mux
}

// noCache makes browsers revalidate assets, so a new binary's page is
// never mixed with an old script.
func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

func (d *Dashboard) serveState(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(d.snapshot())
}

// serveEvents streams frames as server-sent events: the snapshot first,
// then each update, until the page goes away or the dashboard closes.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	frames, unwatch := d.watch()
	defer unwatch()
	first, err := json.Marshal(d.snapshot())
	if err != nil {
		http.Error(w, "encoding the dashboard", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	// A page whose stream broke reconnects after retry milliseconds.
	if !sendEvent(w, rc, []byte("retry: 2000\n"), first) {
		return
	}
	front.Park(r.Context())
	for {
		select {
		case f := <-frames:
			if !sendEvent(w, rc, nil, f) {
				return
			}
		case <-r.Context().Done():
			return
		case <-d.stop:
			return
		}
	}
}

// sendEvent writes one event carrying data (JSON, which has no newline)
// and flushes it; false means the client is gone.
func sendEvent(w http.ResponseWriter, rc *http.ResponseController, prefix, data []byte) bool {
	buf := make([]byte, 0, len(prefix)+len(data)+8)
	buf = append(buf, prefix...)
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := w.Write(buf); err != nil {
		return false
	}
	return rc.Flush() == nil
}
