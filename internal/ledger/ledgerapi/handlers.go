package ledgerapi

import (
	"context"
	"net/http"

	"github.com/surge-dev/surge/internal/ledger"
)

// sameAccount is the problem of a transfer whose from equals its to. It is
// decided here, without the ledger, since it needs no state.
func sameAccount(id string) *problem {
	return newProblem(string(ledger.CodeSameAccount), "from and to are both "+id)
}

// pathID returns the {id} of the request path if it is a valid id.
func pathID(r *http.Request) (string, *problem) {
	id := r.PathValue("id")
	if !ValidID(id) {
		return "", newProblem(string(ledger.CodeInvalidArgument), "id in path: "+msgID)
	}
	return id, nil
}

// sendJSON writes a JSON reply built in ob.
func sendJSON(w http.ResponseWriter, status int, ob *[]byte) int {
	return send(w, status, hdrJSON, ob)
}

func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) int {
	return writeProblem(w, a.ledgerProblem(r.Context(), netRequest(w, r), err))
}

func (a *API) createAccount(w http.ResponseWriter, r *http.Request) int {
	body, p := readBody(r, maxBody)
	if p != nil {
		return writeProblem(w, p)
	}
	spec, ierr := decodeAccount(*body)
	putBuf(body)
	if ierr != nil {
		return writeProblem(w, inputProblem(ierr))
	}
	acct, created, err := a.ledger.CreateAccount(r.Context(), spec)
	if err != nil {
		return a.fail(w, r, err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	ob := getBuf()
	*ob = appendAccount(*ob, &acct)
	return sendJSON(w, status, ob)
}

func (a *API) history(w http.ResponseWriter, r *http.Request) int {
	id, p := pathID(r)
	if p != nil {
		return writeProblem(w, p)
	}
	q, ierr := parseHistoryQuery(r.URL.RawQuery)
	if ierr != nil {
		return writeProblem(w, inputProblem(ierr))
	}
	page, err := a.ledger.History(r.Context(), id, q)
	if err != nil {
		return a.fail(w, r, err)
	}
	ob := getBuf()
	*ob = appendHistory(*ob, &page)
	return sendJSON(w, http.StatusOK, ob)
}

// created is the status of a write: 201, or 200 for an idempotent replay.
func created(replayed bool) int {
	if replayed {
		return http.StatusOK
	}
	return http.StatusCreated
}

func (a *API) sendTransfer(w http.ResponseWriter, status int, t *ledger.Transfer) int {
	ob := getBuf()
	*ob = appendTransfer(*ob, t)
	return sendJSON(w, status, ob)
}

func (a *API) getTransfer(w http.ResponseWriter, r *http.Request) int {
	id, p := pathID(r)
	if p != nil {
		return writeProblem(w, p)
	}
	t, err := a.ledger.GetTransfer(r.Context(), id)
	if err != nil {
		return a.fail(w, r, err)
	}
	return a.sendTransfer(w, http.StatusOK, &t)
}

func (a *API) postPending(w http.ResponseWriter, r *http.Request) int {
	return a.finishPending(w, r, decodePost, a.ledger.PostPending)
}

func (a *API) voidPending(w http.ResponseWriter, r *http.Request) int {
	noAmount := func(body []byte) (int64, *inputError) { return 0, decodeEmpty(body) }
	void := func(ctx context.Context, id string, _ int64) (ledger.Transfer, error) {
		return a.ledger.VoidPending(ctx, id)
	}
	return a.finishPending(w, r, noAmount, void)
}

// finishPending serves post and void: a transfer id in the path, a small
// body decoded by decode, the ledger's act, and the transfer in reply.
func (a *API) finishPending(w http.ResponseWriter, r *http.Request,
	decode func([]byte) (int64, *inputError),
	act func(ctx context.Context, id string, amount int64) (ledger.Transfer, error)) int {
	id, p := pathID(r)
	if p != nil {
		return writeProblem(w, p)
	}
	body, p := readBody(r, maxBody)
	if p != nil {
		return writeProblem(w, p)
	}
	amount, ierr := decode(*body)
	putBuf(body)
	if ierr != nil {
		return writeProblem(w, inputProblem(ierr))
	}
	t, err := act(r.Context(), id, amount)
	if err != nil {
		return a.fail(w, r, err)
	}
	return a.sendTransfer(w, http.StatusOK, &t)
}

func (a *API) stats(w http.ResponseWriter, r *http.Request) int {
	s, err := a.ledger.Stats(r.Context())
	if err != nil {
		return a.fail(w, r, err)
	}
	ob := getBuf()
	*ob = appendStats(*ob, &s)
	return sendJSON(w, http.StatusOK, ob)
}
