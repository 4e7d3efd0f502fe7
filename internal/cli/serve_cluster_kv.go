package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/surge-dev/surge/internal/cluster/node"
	"github.com/surge-dev/surge/internal/kv"
	"github.com/surge-dev/surge/internal/kv/kvapi"
)

// clusterKV serves /v0 on a cluster node: /v0/entity's GET (200 with the
// value, or 404), PUT (201) and DELETE (202), each answered once its
// partition's owner committed it, and /v0/entities' ranges, merged from
// every partition's part (node.KV.Range) with the single node's framing.
func clusterKV(entries *node.KV, maxValue int, authorized func(string) bool, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "this API needs Authorization: Bearer <api key>", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v0/entities":
			scan := func(start, end string) (kvapi.Entries, error) { return openRange(r.Context(), entries, start, end) }
			kvapi.ServeRange(w, r, scan, func(w http.ResponseWriter, err error) int {
				kvUnavailable(w, err)
				return http.StatusServiceUnavailable
			}, log)
			return
		case "/v0/entity":
		default:
			http.Error(w, "unknown path: /v0 has /v0/entity?id= and /v0/entities?start=", http.StatusBadRequest)
			return
		}
		id := r.URL.Query().Get("id")
		if err := kv.CheckKey(id); err != nil {
			http.Error(w, "id: "+err.Error(), http.StatusBadRequest)
			return
		}
		switch r.Method {
		case http.MethodGet:
			v, found, err := entries.Get(r.Context(), id)
			switch {
			case err != nil:
				kvUnavailable(w, err)
			case !found:
				w.WriteHeader(http.StatusNotFound)
			default:
				w.Header().Set("Content-Type", "application/octet-stream")
				_, _ = w.Write(v)
			}
		case http.MethodPut:
			v, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(maxValue)))
			var tooBig *http.MaxBytesError
			switch {
			case errors.As(err, &tooBig):
				http.Error(w, "value larger than the limit", http.StatusRequestEntityTooLarge)
			case err != nil:
				http.Error(w, "reading the value: "+err.Error(), http.StatusBadRequest)
			default:
				kvWritten(w, entries.Put(r.Context(), id, v), http.StatusCreated)
			}
		case http.MethodDelete:
			kvWritten(w, entries.Delete(r.Context(), id), http.StatusAccepted)
		default:
			w.Header().Set("Allow", "GET, PUT, DELETE")
			http.Error(w, "/v0/entity allows GET, PUT and DELETE", http.StatusMethodNotAllowed)
		}
	})
}

func kvWritten(w http.ResponseWriter, err error, status int) {
	if err != nil {
		kvUnavailable(w, err)
		return
	}
	w.WriteHeader(status)
}

func kvUnavailable(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, err.Error(), http.StatusServiceUnavailable)
}

// openRange opens a range of the cluster's entries.
func openRange(ctx context.Context, entries *node.KV, start, end string) (kvapi.Entries, error) {
	rg, err := entries.Range(ctx, start, end)
	if err != nil {
		return nil, err
	}
	return rg, nil
}
