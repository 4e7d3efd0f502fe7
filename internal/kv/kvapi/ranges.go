package kvapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/surge-dev/surge/internal/telemetry"
)

// Entries walks a key range's entries in key order: a snapshot of one
// store (kvstore.Iter), or in cluster mode the merge of the parts each
// partition's owner reads. It must be closed.
type Entries interface {
	Next() (key, value []byte, ok bool)
	Err() error
	Close() error
}

// Scanner opens the entries of [start, end), or from start to the last key
// if end is empty.
type Scanner func(start, end string) (Entries, error)

// ServeRange serves GET /v0/entities?start=K[&end=K] with the entries scan
// opens: one chunk per entry (key \n value), each written and flushed as
// the iterator reaches it, so that no range is ever held in memory. A scan
// that cannot open is answered by refuse, which writes the reply and
// returns its status; one that fails mid-stream breaks the connection, so
// that the client does not take the range as complete.
func ServeRange(w http.ResponseWriter, r *http.Request, scan Scanner, refuse func(http.ResponseWriter, error) int, log *slog.Logger) int {
	if r.Method != http.MethodGet {
		w.Header()["Allow"] = allowEntities
		return fail(w, http.StatusMethodNotAllowed, "/v0/entities allows GET")
	}
	start, end, err := rangeParams(r.URL.RawQuery)
	if err != nil {
		return fail(w, http.StatusBadRequest, err.Error())
	}
	it, err := scan(start, end)
	if err != nil {
		return refuse(w, err)
	}
	defer it.Close()
	w.Header()["Content-Type"] = octetStream
	rc := http.NewResponseController(w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }() // the connection lives on
	buf := getBuffer()
	defer putBuffer(buf)
	for k, v, ok := it.Next(); ok; k, v, ok = it.Next() {
		// One Write per entry into an empty response buffer, then a
		// flush: net/http makes exactly one chunk of it, however large.
		*buf = append(append(append((*buf)[:0], k...), '\n'), v...)
		_ = rc.SetWriteDeadline(time.Now().Add(rangeStall))
		if _, err := w.Write(*buf); err != nil {
			return http.StatusOK // the client left; nothing more to do
		}
		if err := rc.Flush(); err != nil {
			return http.StatusOK
		}
	}
	if err := it.Err(); err != nil {
		log.Error("range read failed mid-stream", "request_id", telemetry.RequestID(w), "start", start, "end", end, "err", err)
		// Ending the reply normally would tell the client the range is
		// complete; breaking the connection tells it otherwise.
		panic(http.ErrAbortHandler)
	}
	return http.StatusOK
}
