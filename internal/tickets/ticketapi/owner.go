package ticketapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// Who may act on a reservation. The API identifies users only by the
// userId in a request body, which anyone can write; so a reservation is
// owned by whoever holds its hold token: a secret the POST that files it
// answers in the Reservation-Token header, and nothing else ever shows.
// The id itself travels in URLs (logs, proxies, browser history) and
// proves nothing. The token is an HMAC of the id under a secret kept in
// the data directory, so it needs no storage and survives restarts.
//
// The operator — a client with the API key, or any client of a server
// without one (loopback only) — may act on every reservation.

// TokenHeader carries a reservation's hold token.
const TokenHeader = "Reservation-Token"

// holdToken is the hold token of reservation id.
func (a *API) holdToken(id string) string {
	m := hmac.New(sha256.New, a.opts.HoldSecret)
	m.Write([]byte("surge reservation hold\x00" + id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// operator reports whether r comes from the operator.
func (a *API) operator(r *http.Request) bool {
	return a.opts.APIKey == "" || a.validKey(r.Header.Get("Authorization"))
}

// validKey reports whether an Authorization header carries the API key.
func (a *API) validKey(authorization string) bool {
	token, ok := strings.CutPrefix(authorization, "Bearer ")
	sum := sha256.Sum256([]byte(token))
	return ok && subtle.ConstantTimeCompare(sum[:], a.keyHash[:]) == 1
}

// owned runs h when r comes from the operator or carries reservation
// {id}'s hold token, and answers 401 or 403 otherwise.
func (a *API) owned(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request) int {
		if a.operator(r) {
			return h(w, r)
		}
		token := r.Header.Get(TokenHeader)
		if token == "" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			return writeProblem(w, http.StatusUnauthorized, "unauthorized",
				"the reservation's token ("+TokenHeader+" header, from the reply that filed it) or the API key is required")
		}
		if !hmac.Equal([]byte(token), []byte(a.holdToken(r.PathValue("id")))) {
			return writeProblem(w, http.StatusForbidden, "forbidden", "the "+TokenHeader+" is not this reservation's")
		}
		return h(w, r)
	}
}
