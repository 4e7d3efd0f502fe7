package kvapi

import (
	"errors"
	"net/http"

	"github.com/surge-dev/surge/internal/kv"
	"github.com/surge-dev/surge/internal/store"
)

// Bodies of the replies to writes a faulted store refuses.
const (
	storageFull        = "storage_full: the disk is full; writes are refused until space is freed and surge restarts (it does so by itself); reads are served"
	storageUnavailable = "storage_unavailable: the disk failed a write; writes are refused, reads are served"
	entriesUnavailable = "unavailable: the key's storage did not answer in time; retry"
)

// retryAfter is the Retry-After of a 503: the refusal is expected to pass.
var retryAfter = []string{"1"}

// refusal is the status and body answering err if it is a store's write
// fault: 507 for a full disk, 503 for another failure, which are no fault
// of the request and are not logged per request (the store says it once);
// or 503 for entries that did not answer (kv.ErrUnavailable), which the
// client may retry. It is 0 for other errors.
func refusal(err error) (int, string) {
	switch {
	case errors.Is(err, store.ErrFull):
		return http.StatusInsufficientStorage, storageFull
	case errors.Is(err, store.ErrUnavailable):
		return http.StatusServiceUnavailable, storageUnavailable
	case errors.Is(err, kv.ErrUnavailable):
		return http.StatusServiceUnavailable, entriesUnavailable
	}
	return 0, ""
}
