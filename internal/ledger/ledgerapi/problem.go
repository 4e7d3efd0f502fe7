package ledgerapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/telemetry"
)

// Codes that only the transport produces; the rest are ledger.Code values.
const (
	codeUnauthorized         = "unauthorized"
	codeNotFound             = "not_found"
	codeMethodNotAllowed     = "method_not_allowed"
	codeBodyTooLarge         = "body_too_large"
	codeBatchTooLarge        = "batch_too_large"
	codeUnsupportedMediaType = "unsupported_media_type"
	codeInternal             = "internal"
)

// problem is an RFC 9457 problem: an HTTP status, a stable code and a detail
// for people.
type problem struct {
	status int
	code   string
	detail string
}

// codeInfo is what docs/API.md says about one code.
type codeInfo struct {
	status int
	title  string
}

var codes = map[string]codeInfo{
	string(ledger.CodeInvalidArgument):     {http.StatusBadRequest, "Invalid argument"},
	codeUnauthorized:                       {http.StatusUnauthorized, "Unauthorized"},
	string(ledger.CodeAccountNotFound):     {http.StatusNotFound, "Account not found"},
	string(ledger.CodeTransferNotFound):    {http.StatusNotFound, "Transfer not found"},
	codeNotFound:                           {http.StatusNotFound, "Not found"},
	codeMethodNotAllowed:                   {http.StatusMethodNotAllowed, "Method not allowed"},
	string(ledger.CodeAccountExists):       {http.StatusConflict, "Account exists"},
	string(ledger.CodeIdempotencyConflict): {http.StatusConflict, "Idempotency conflict"},
	string(ledger.CodeTransferNotPending):  {http.StatusConflict, "Transfer not pending"},
	codeBodyTooLarge:                       {http.StatusRequestEntityTooLarge, "Body too large"},
	codeBatchTooLarge:                      {http.StatusRequestEntityTooLarge, "Batch too large"},
	codeUnsupportedMediaType:               {http.StatusUnsupportedMediaType, "Unsupported media type"},
	string(ledger.CodeInsufficientFunds):   {http.StatusUnprocessableEntity, "Insufficient funds"},
	string(ledger.CodeCurrencyMismatch):    {http.StatusUnprocessableEntity, "Currency mismatch"},
	string(ledger.CodeSameAccount):         {http.StatusUnprocessableEntity, "Same account"},
	string(ledger.CodeExceedsPending):      {http.StatusUnprocessableEntity, "Exceeds pending"},
	string(ledger.CodeBatchAborted):        {http.StatusUnprocessableEntity, "Batch aborted"},
	string(ledger.CodeOverloaded):          {http.StatusServiceUnavailable, "Overloaded"},
	string(ledger.CodeStorageFull):         {http.StatusInsufficientStorage, "Storage full"},
	string(ledger.CodeStorageUnavailable):  {http.StatusServiceUnavailable, "Storage unavailable"},
	codeInternal:                           {http.StatusInternalServerError, "Internal error"},
}

func titleOf(code string) string { return codes[code].title }

// newProblem makes a problem for one of the codes above.
func newProblem(code, detail string) *problem {
	return &problem{status: codes[code].status, code: code, detail: detail}
}

// internalProblem is what a client sees of a server fault: nothing of it.
var internalProblem = &problem{status: http.StatusInternalServerError, code: codeInternal, detail: "internal error"}

// inputProblem turns a decoding or validation error into its problem.
func inputProblem(e *inputError) *problem {
	if e.kind == errBatchTooLarge {
		return newProblem(codeBatchTooLarge, e.Error())
	}
	return newProblem(string(ledger.CodeInvalidArgument), e.Error())
}

// ledgerProblem maps an error from the Ledger to its problem. Anything that
// is not a *ledger.Error with a known code is a server fault: it is logged
// and the client gets a bare 500.
func (a *API) ledgerProblem(ctx context.Context, req requestInfo, err error) *problem {
	var le *ledger.Error
	if errors.As(err, &le) {
		if info, ok := codes[string(le.Code)]; ok && le.Code != "" {
			return &problem{status: info.status, code: string(le.Code), detail: le.Detail}
		}
	}
	level := slog.LevelError
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		level = slog.LevelDebug // the client went away; nothing is wrong here
	}
	a.log.Log(ctx, level, "ledger request failed", "request_id", req.id, "method", req.method, "path", req.path, "err", err)
	return internalProblem
}

// requestInfo names a request in logs, whichever server read it.
type requestInfo struct{ id, method, path string }

func netRequest(w http.ResponseWriter, r *http.Request) requestInfo {
	return requestInfo{telemetry.RequestID(w), r.Method, r.URL.Path}
}

// Shared header values: assigning a prebuilt slice to the header map saves
// the allocation http.Header.Set makes on every reply. net/http never
// modifies them.
var (
	hdrJSON    = []string{"application/json"}
	hdrProblem = []string{"application/problem+json"}
	hdrText    = []string{"text/plain; charset=utf-8"}
)

// writeProblem sends p and returns its status.
func writeProblem(w http.ResponseWriter, p *problem) int {
	if name, value := p.header(); name != "" {
		w.Header()[name] = []string{value}
	}
	ob := getBuf()
	*ob = appendProblem(*ob, p)
	return send(w, p.status, hdrProblem, ob)
}

// header is the one header p's reply carries beside the body, if any.
func (p *problem) header() (name, value string) {
	switch p.code {
	case string(ledger.CodeOverloaded), string(ledger.CodeStorageUnavailable):
		return "Retry-After", "1"
	case codeUnauthorized:
		return "Www-Authenticate", `Bearer realm="surge"`
	}
	return "", ""
}
