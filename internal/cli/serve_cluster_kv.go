package cli

import (
	"errors"
	"io"
	"net/http"

	"github.com/surge-dev/surge/internal/cluster/node"
	"github.com/surge-dev/surge/internal/kv"
)

// clusterKV serves /v0/entity on a cluster node: GET (200 with the value,
// or 404), PUT (201) and DELETE (202), each answered once its partition's
// owner committed it. Ranges (/v0/entities) span partitions and answer
// 501.
func clusterKV(entries *node.KV, maxValue int, authorized func(string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "this API needs Authorization: Bearer <api key>", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/v0/entity" {
			notInCluster("key-value ranges (/v0/entities)").ServeHTTP(w, r)
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
