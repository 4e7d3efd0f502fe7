package ledgerapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/surge-dev/surge/internal/front"
	"github.com/surge-dev/surge/internal/ledger"
)

func batchField(key []byte) fields {
	switch string(key) {
	case "atomic":
		return fAtomic
	case "transfers":
		return fTransfers
	}
	return 0
}

// batchInput is a decoded and validated batch.
type batchInput struct {
	atomic bool
	reqs   []ledger.TransferRequest
	// same lists, in order, the items whose from equals to: they fail with
	// same_account without reaching the ledger.
	same []int
}

// itemsPool recycles the decoded items of batches. Unlike the requests made
// from them, they never leave this package, so they can be reused.
var itemsPool = sync.Pool{New: func() any { return new([]transferInput) }}

// decodeBatch decodes and validates the body of POST /v1/transfers/batch.
// The whole body is decoded before any item is validated, so that malformed
// JSON anywhere is reported as such, as encoding/json would. Any invalid
// item fails the whole batch with invalid_argument (naming the item), so
// that a malformed batch changes nothing, atomic or not.
func decodeBatch(body []byte) (b batchInput, err *inputError) {
	items := itemsPool.Get().(*[]transferInput)
	defer func() {
		clear(*items) // drop the strings, which now belong to b.reqs
		*items = (*items)[:0]
		itemsPool.Put(items)
	}()
	s := newScanner(body)
	s.arena = make([]byte, 0, 512) // reused by every item; grows for the rare long one
	present, err := s.batch(&b, items)
	if err != nil {
		return b, err
	}
	if !present {
		return b, &inputError{kind: errValue, field: "transfers", msg: msgRequired}
	}
	return b, b.validate(*items)
}

// batch decodes the batch object into b and *items; present reports whether
// it had a transfers array.
func (s *scanner) batch(b *batchInput, items *[]transferInput) (present bool, err *inputError) {
	if err = s.openObject(""); err != nil {
		return false, err
	}
	var seen fields
	for first := true; ; {
		f, err := s.nextField(&first, &seen, batchField)
		if err != nil {
			return false, err
		}
		if f == 0 {
			break
		}
		if f == fAtomic {
			_, err = s.setBool("atomic", &b.atomic)
		} else {
			present, err = s.items(items)
		}
		if err != nil {
			return false, err
		}
	}
	return present, s.end()
}

// items decodes the "transfers" array into *items.
func (s *scanner) items(items *[]transferInput) (bool, *inputError) {
	if null, err := s.null(); null || err != nil {
		return false, err
	}
	if s.peek() != '[' {
		return false, s.wrongType("transfers", "an array of transfer objects")
	}
	s.pos++
	*items = (*items)[:0]
	defer func() { s.item = -1 }()
	for first := true; ; {
		more, err := s.element(&first)
		if err != nil || !more {
			return true, err
		}
		s.item = len(*items)
		if s.item == ledger.MaxBatch {
			return true, &inputError{kind: errBatchTooLarge, field: "transfers", msg: "a batch holds at most 8190 transfers"}
		}
		in, err := s.transfer()
		if err != nil {
			return true, err
		}
		*items = append(*items, in)
	}
}

// validate checks the decoded items and makes b's requests of them.
func (b *batchInput) validate(items []transferInput) *inputError {
	b.reqs = make([]ledger.TransferRequest, len(items))
	for i := range items {
		req, err := items[i].request(i)
		if err != nil {
			b.reqs = nil
			return err
		}
		if req.From == req.To {
			b.same = append(b.same, i)
		}
		b.reqs[i] = req
	}
	return nil
}

// createBatch serves POST /v1/transfers/batch natively: the TPC-B
// transaction of `surge bench tpcb` is one of these and a read, and through
// net/http's adaptor the pair cost more in copies and allocations
// (fasthttpadaptor, net/http's Request and headers) than in ledger work.
func (a *API) createBatch(ctx *fasthttp.RequestCtx) int {
	body, p := fastBody(ctx, MaxBatchBody)
	if p != nil {
		return problemFast(ctx, p)
	}
	b, ierr := decodeBatch(body)
	if ierr != nil {
		return problemFast(ctx, inputProblem(ierr))
	}
	a.metrics.batchSize.Observe(float64(len(b.reqs)))
	results, err := a.applyBatch(front.Context(ctx), &b)
	if err != nil {
		return a.failFast(ctx, err)
	}
	ob, status := a.batchReply(ctx, &b, results)
	return sendFast(ctx, status, "application/json", ob)
}

// errShortBatch is a Ledger bug: a batch answered with too few or too many results.
var errShortBatch = errors.New("ledger returned a different number of batch results than requests")

// applyBatch sends the batch's items to the ledger, except those that fail
// same_account, and returns one result per item it sent, in order. An atomic
// batch with a same_account item is not sent at all: its other items are
// aborted here.
func (a *API) applyBatch(ctx context.Context, b *batchInput) ([]ledger.BatchResult, error) {
	if len(b.reqs) == 0 {
		return nil, nil
	}
	reqs := b.reqs
	if len(b.same) > 0 {
		reqs = withoutSame(b)
		if b.atomic {
			return abortAll(len(reqs), b.same[0]), nil
		}
	}
	results, err := a.ledger.TransferBatch(ctx, reqs, b.atomic)
	if err == nil && len(results) != len(reqs) {
		err = errShortBatch
	}
	return results, err
}

// withoutSame returns the batch's requests minus its same_account items.
func withoutSame(b *batchInput) []ledger.TransferRequest {
	reqs := make([]ledger.TransferRequest, 0, len(b.reqs)-len(b.same))
	same := b.same
	for i := range b.reqs {
		if len(same) > 0 && same[0] == i {
			same = same[1:]
			continue
		}
		reqs = append(reqs, b.reqs[i])
	}
	return reqs
}

// abortAll makes n batch_aborted results, blaming item culprit.
func abortAll(n, culprit int) []ledger.BatchResult {
	err := ledger.Errorf(ledger.CodeBatchAborted, "the atomic batch was not applied because transfers[%d] failed", culprit)
	rs := make([]ledger.BatchResult, n)
	for i := range rs {
		rs[i].Err = err
	}
	return rs
}

// batchReply builds the reply to a batch from the ledger's results (one per
// item sent) and the items failed here, and returns it with its status: 200,
// or for an atomic batch with a failed item, 422 (or the 5xx of a fault).
func (a *API) batchReply(ctx *fasthttp.RequestCtx, b *batchInput, results []ledger.BatchResult) (*[]byte, int) {
	ob := getBuf()
	buf := append(*ob, `{"results":[`...)
	status := http.StatusOK
	same := b.same
	for i := range b.reqs {
		if i > 0 {
			buf = append(buf, ',')
		}
		var res itemResult
		if len(same) > 0 && same[0] == i {
			same = same[1:]
			res = itemResult{id: b.reqs[i].ID, status: http.StatusUnprocessableEntity,
				code: string(ledger.CodeSameAccount), detail: "from and to are both " + b.reqs[i].From}
		} else {
			res = a.itemResult(ctx, &b.reqs[i], &results[0])
			results = results[1:]
		}
		buf = appendResult(buf, &res)
		if b.atomic && res.code != "" && status < res.status {
			status = max(res.status, http.StatusUnprocessableEntity)
		}
	}
	*ob = append(buf, `]}`...)
	return ob, status
}

// itemResult turns the ledger's result for one request into what the client
// sees. The id is the transfer's, which the server assigned if the request
// had none; a failed item without an id gets "".
func (a *API) itemResult(ctx *fasthttp.RequestCtx, req *ledger.TransferRequest, br *ledger.BatchResult) itemResult {
	id := br.Transfer.ID
	if id == "" {
		id = req.ID
	}
	if br.Err == nil {
		return itemResult{id: id, status: created(br.Replayed)}
	}
	p := a.ledgerProblem(front.Context(ctx), fastRequest(ctx), br.Err)
	return itemResult{id: id, status: p.status, code: p.code, detail: p.detail}
}

// appendResult appends one item of the batch reply.
func appendResult(b []byte, r *itemResult) []byte {
	b = appendStr(b, `{"id":`, r.id)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.status), 10)
	if r.code != "" {
		b = appendStr(b, `,"code":`, r.code)
		b = appendStr(b, `,"detail":`, r.detail)
	}
	return append(b, '}')
}
