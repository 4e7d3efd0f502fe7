package kvapi

import (
	"net/http"
	"time"

	"github.com/surge-dev/surge/internal/telemetry"
)

// entities serves GET /v0/entities?start=K[&end=K]: one chunk per entry
// (key \n value), each written and flushed as the store's walk reaches it,
// so that no range is ever held in memory. A walk that fails mid-stream
// breaks the connection, so that the client does not take the range as
// complete.
func (h *Handler) entities(w http.ResponseWriter, r *http.Request) int {
	if r.Method != http.MethodGet {
		w.Header()["Allow"] = allowEntities
		return fail(w, http.StatusMethodNotAllowed, "/v0/entities allows GET")
	}
	start, end, err := rangeParams(r.URL.RawQuery)
	if err != nil {
		return fail(w, http.StatusBadRequest, err.Error())
	}
	it, err := h.kv.Scan(r.Context(), start, end)
	if err != nil {
		return h.refuseScan(w, err)
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
		h.log.Error("range read failed mid-stream", "request_id", telemetry.RequestID(w), "start", start, "end", end, "err", err)
		// Ending the reply normally would tell the client the range is
		// complete; breaking the connection tells it otherwise.
		panic(http.ErrAbortHandler)
	}
	return http.StatusOK
}

// refuseScan answers a store that could not open a range.
func (h *Handler) refuseScan(w http.ResponseWriter, err error) int {
	if status, msg := refusal(err); status != 0 {
		if status == http.StatusServiceUnavailable {
			w.Header()["Retry-After"] = retryAfter
		}
		return fail(w, status, msg)
	}
	h.logFault(telemetry.RequestID(w), "range", err)
	return fail(w, http.StatusInternalServerError, "internal error")
}
