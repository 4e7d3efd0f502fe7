package ledgerapi

import (
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/surge-dev/surge/internal/ledger"
)

// Body limits from docs/API.md.
const (
	maxBody = 1 << 20
	// MaxBatchBody bounds a batch request's body, the largest any ledger
	// route takes.
	MaxBatchBody = 4 << 20
)

// bufPool recycles request and reply buffers: a batch body is up to 4 MiB
// and its reply a few hundred KiB, and allocating those afresh per request
// would keep the garbage collector busy at the target rates.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooled caps what goes back into the pool, so that one odd reply does not
// pin a huge buffer.
const maxPooled = MaxBatchBody + 4096

func getBuf() *[]byte {
	b := bufPool.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

func putBuf(b *[]byte) {
	if cap(*b) <= maxPooled {
		bufPool.Put(b)
	}
}

// send writes a complete reply with the given content type and releases ob.
func send(w http.ResponseWriter, status int, contentType []string, ob *[]byte) int {
	h := w.Header()
	h["Content-Type"] = contentType
	h["Content-Length"] = []string{strconv.Itoa(len(*ob))}
	w.WriteHeader(status)
	_, _ = w.Write(*ob) // a failed write means the client left; nothing to do
	putBuf(ob)
	return status
}

// readBody checks the request's Content-Type and reads its body, up to limit
// bytes. The caller must putBuf the result once it has decoded it.
func readBody(r *http.Request, limit int) (*[]byte, *problem) {
	if r.ContentLength != 0 && !isJSON(r.Header["Content-Type"]) {
		return nil, newProblem(codeUnsupportedMediaType, "Content-Type must be application/json")
	}
	if r.ContentLength > int64(limit) {
		return nil, tooLarge(limit)
	}
	bp := getBuf()
	b, err := readAll(r.Body, *bp, r.ContentLength, limit)
	*bp = b
	if err != nil {
		putBuf(bp)
		return nil, err
	}
	return bp, nil
}

// readAll appends the body to b until EOF or until it exceeds limit.
func readAll(body io.Reader, b []byte, size int64, limit int) ([]byte, *problem) {
	if size > 0 && cap(b) <= int(size) {
		b = make([]byte, 0, size+1) // +1 so that the read that finds EOF needs no growth
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > limit {
			return b, tooLarge(limit)
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, newProblem(string(ledger.CodeInvalidArgument), "could not read the request body: "+err.Error())
		}
	}
}

func tooLarge(limit int) *problem {
	return newProblem(codeBodyTooLarge, "the body exceeds the limit of "+strconv.Itoa(limit>>20)+" MiB for this route")
}

// isJSON reports whether a request's Content-Type header allows JSON: absent,
// empty, application/json or application/*+json, with no charset or UTF-8.
func isJSON(v []string) bool {
	if len(v) == 0 || v[0] == "" || v[0] == "application/json" {
		return true
	}
	mt, params, err := mime.ParseMediaType(v[0])
	if err != nil {
		return false
	}
	if mt != "application/json" && !(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}
