// Package ticketapi is the HTTP transport of surge's ticketing (docs/API.md):
// ticket-master's endpoints with its paths, fields and codes, so that its
// load client and k6 scripts run unchanged, plus seat maps, payment and
// cancellation.
//
// Bodies are decoded with encoding/json, rejecting unknown fields as
// ticket-master's Jackson binding does; errors are RFC 9457 problems with a
// stable code, like the rest of surge's /v1 API.
package ticketapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/telemetry"
	"github.com/surge-dev/surge/internal/tickets"
)

// Limits on requests.
const (
	maxEventBody       = 1 << 20
	maxReservationBody = 16 << 10
	maxUserID          = 128
	// LongPoll is how long GET /v1/reservation/{id} waits for a decision
	// before answering 503, as ticket-master does.
	LongPoll = 10 * time.Second
	maxWait  = time.Minute
)

// Box is the ticketing engine the API serves; *ticketengine.Tickets is one.
type Box interface {
	CreateEvent(ctx context.Context, spec tickets.EventSpec) (tickets.EventSpec, bool, error)
	Event(name string) (tickets.EventStatus, error)
	InspectArea(ctx context.Context, event, area string) (tickets.AreaSeats, error)
	Reserve(userID string, req tickets.ReserveRequest) (string, error)
	Reservation(ctx context.Context, id string, timeout time.Duration) (tickets.Reservation, error)
	PayReservation(ctx context.Context, id, account string) (tickets.Reservation, error)
	CancelReservation(ctx context.Context, id string) (tickets.Reservation, error)
}

// Options configure the API.
type Options struct {
	// APIKey, when set, is required as a bearer token to create events, to
	// pay (both are operator or ledger actions) and to see who holds which
	// seat. Filing and reading reservations stay open, like
	// ticket-master's; cancelling one takes its hold token or the key.
	APIKey string
	// HoldSecret derives reservations' hold tokens (owner.go); it must
	// stay the same across restarts for tokens to.
	HoldSecret []byte
	// Ready reports whether /v1/health_check answers 200.
	Ready func() bool
	// Registry receives the API's metrics; nil means none.
	Registry prometheus.Registerer
	Logger   *slog.Logger
}

// API serves ticketing over HTTP.
type API struct {
	box     Box
	opts    Options
	keyHash [sha256.Size]byte
	mux     *http.ServeMux
	latency *prometheus.HistogramVec
}

// New returns the API serving box.
func New(box Box, opts Options) *API {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.HoldSecret == nil {
		opts.HoldSecret = make([]byte, sha256.Size)
		_, _ = rand.Read(opts.HoldSecret) // never fails (crypto/rand)
	}
	a := &API{box: box, opts: opts, mux: http.NewServeMux(), keyHash: sha256.Sum256([]byte(opts.APIKey))}
	a.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "surge_tickets_request_seconds",
		Help:    "Ticketing request latency by route and status.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 20),
	}, []string{"route", "code"})
	if opts.Registry != nil {
		opts.Registry.MustRegister(a.latency)
	}
	a.handle("POST /v1/event", a.keyed(a.createEvent))
	a.handle("GET /v1/event/{id}", a.getEvent)
	a.handle("GET /v1/event/{id}/area/{area}", a.getArea)
	a.handle("DELETE /v1/reservation/{id}", a.owned(a.cancel))
	a.handle("POST /v1/reservation/{id}/pay", a.keyed(a.pay))
	a.handle("GET /v1/health_check", a.health)
	return a
}

// Routes are the path patterns the API serves, for mounting it beside
// other handlers.
var Routes = []string{"/v1/event", "/v1/event/", "/v1/reservation/", "/v1/health_check"}

// ServeHTTP serves the ticketing routes.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

type handler func(w http.ResponseWriter, r *http.Request) int

// handle registers h and records its latency under its pattern.
func (a *API) handle(pattern string, h handler) {
	a.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		code := h(w, r)
		a.latency.WithLabelValues(pattern, statusText(code)).Observe(time.Since(start).Seconds())
	})
}

func (a *API) keyed(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request) int {
		if !a.operator(r) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			return writeProblem(w, http.StatusUnauthorized, "unauthorized", "a valid API key is required")
		}
		return h(w, r)
	}
}

func (a *API) createEvent(w http.ResponseWriter, r *http.Request) int {
	var body eventJSON
	if status := decode(w, r, maxEventBody, &body); status != 0 {
		return status
	}
	spec, _, err := a.box.CreateEvent(r.Context(), body.spec())
	if err != nil {
		return a.fail(w, err)
	}
	return writeJSON(w, http.StatusOK, eventOf(&spec))
}

func (a *API) getEvent(w http.ResponseWriter, r *http.Request) int {
	st, err := a.box.Event(r.PathValue("id"))
	if err != nil {
		return a.fail(w, err)
	}
	return writeJSON(w, http.StatusOK, statusOf(&st))
}

func (a *API) getArea(w http.ResponseWriter, r *http.Request) int {
	seats, err := a.box.InspectArea(r.Context(), r.PathValue("id"), r.PathValue("area"))
	if err != nil {
		return a.fail(w, err)
	}
	return writeJSON(w, http.StatusOK, areaSeatsOf(&seats, a.operator(r)))
}

// request checks what the domain does not: the strategy, the user and the
// event named by both the path and the body.
func (b *reserveJSON) request(pathEvent string) (tickets.ReserveRequest, error) {
	switch {
	case b.Type != tickets.Random && b.Type != tickets.SelfPick:
		return tickets.ReserveRequest{}, fmt.Errorf("type %q: want RANDOM or SELF_PICK", b.Type)
	case b.UserID == "" || len(b.UserID) > maxUserID:
		return tickets.ReserveRequest{}, fmt.Errorf("userId: want 1 to %d bytes", maxUserID)
	case b.EventID != "" && b.EventID != pathEvent:
		return tickets.ReserveRequest{}, fmt.Errorf("eventId %q differs from the event in the path, %q", b.EventID, pathEvent)
	}
	return tickets.ReserveRequest{EventID: pathEvent, AreaID: b.AreaID, Kind: b.Type, NumOfSeats: b.NumOfSeats, Seats: b.Seats}, nil
}

func (a *API) cancel(w http.ResponseWriter, r *http.Request) int {
	res, err := a.box.CancelReservation(r.Context(), r.PathValue("id"))
	if err != nil {
		return a.fail(w, err)
	}
	return writeReservation(w, &res)
}

func (a *API) pay(w http.ResponseWriter, r *http.Request) int {
	var body payJSON
	if status := decode(w, r, maxReservationBody, &body); status != 0 {
		return status
	}
	if body.Account == "" {
		return writeProblem(w, http.StatusBadRequest, string(ledger.CodeInvalidArgument), "account: required")
	}
	held, err := a.box.Reservation(r.Context(), r.PathValue("id"), 0)
	if err != nil {
		return a.fail(w, err)
	}
	if body.Account != held.UserID {
		return writeProblem(w, http.StatusForbidden, "forbidden",
			fmt.Sprintf("account %s is not the reservation's user's: pay from account %s", body.Account, held.UserID))
	}
	res, err := a.box.PayReservation(r.Context(), held.ID, body.Account)
	if err != nil {
		return a.fail(w, err)
	}
	return writeReservation(w, &res)
}

func (a *API) health(w http.ResponseWriter, _ *http.Request) int {
	if a.opts.Ready != nil && !a.opts.Ready() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return http.StatusServiceUnavailable
	}
	w.WriteHeader(http.StatusOK)
	return http.StatusOK
}

// parseWait reads a ?wait= value as a Go duration (or whole seconds), at
// most maxWait; def when absent.
func parseWait(v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		d, err = time.ParseDuration(v + "s")
	}
	if err != nil || d < 0 || d > maxWait {
		return 0, fmt.Errorf("wait %q: want a duration from 0 to %v, like 5s", v, maxWait)
	}
	return d, nil
}

// statuses maps error codes to HTTP statuses; other codes are 422.
var statuses = map[ledger.Code]int{
	ledger.CodeInvalidArgument:      http.StatusBadRequest,
	ledger.CodeAccountNotFound:      http.StatusNotFound,
	tickets.CodeEventNotFound:       http.StatusNotFound,
	tickets.CodeReservationNotFound: http.StatusNotFound,
	tickets.CodeEventExists:         http.StatusConflict,
	tickets.CodeNotPayable:          http.StatusConflict,
	ledger.CodeIdempotencyConflict:  http.StatusConflict,
	ledger.CodeInsufficientFunds:    http.StatusUnprocessableEntity,
	ledger.CodeCurrencyMismatch:     http.StatusUnprocessableEntity,
	ledger.CodeSameAccount:          http.StatusUnprocessableEntity,
	ledger.CodeOverloaded:           http.StatusServiceUnavailable,
	ledger.CodeStorageFull:          http.StatusInsufficientStorage,
	ledger.CodeStorageUnavailable:   http.StatusServiceUnavailable,
}

func (a *API) fail(w http.ResponseWriter, err error) int {
	p := a.failure(err, telemetry.RequestID(w))
	if p.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	return writeProblem(w, p.status, p.code, p.detail)
}

// problem is an error reply's status, code and detail.
type problem struct {
	status       int
	code, detail string
}

// failure is the problem that answers err; unexpected errors are logged
// with the request's id.
func (a *API) failure(err error, requestID string) problem {
	var le *ledger.Error
	if errors.As(err, &le) {
		status, ok := statuses[le.Code]
		if !ok {
			status = http.StatusUnprocessableEntity
		}
		return problem{status, string(le.Code), le.Detail}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return problem{http.StatusServiceUnavailable, "canceled", "request canceled"}
	}
	a.opts.Logger.Error("ticketing request failed", "request_id", requestID, "err", err)
	return problem{http.StatusInternalServerError, "internal", "internal error"}
}

// decode reads a JSON body of at most limit bytes into v; on failure it
// writes the problem and returns its status.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) int {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON value")
	}
	if err == nil {
		return 0
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return writeProblem(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("body over %d bytes", limit))
	}
	return writeProblem(w, http.StatusBadRequest, string(ledger.CodeInvalidArgument), "malformed JSON body: "+timeless(err))
}

// timeText says how a time is written.
const timeText = `want an RFC 3339 time string, like "2026-12-01T20:00:00Z"`

// timeless words a decoding error for people: time's own errors show Go's
// layout string ("2006-01-02T15:04:05Z07:00"), which means nothing to a
// client.
func timeless(err error) string {
	var pe *time.ParseError
	switch {
	case errors.As(err, &pe) && pe.Message != "":
		return fmt.Sprintf("time %q:%s", pe.Value, pe.Message)
	case errors.As(err, &pe):
		return fmt.Sprintf("time %q: %s", pe.Value, timeText)
	case strings.HasPrefix(err.Error(), "Time.UnmarshalJSON"):
		return "a time: " + timeText
	}
	return err.Error()
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		panic("ticketapi: encoding a reply: " + err.Error()) // only our own types get here
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return status
}

type problemJSON struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

func writeProblem(w http.ResponseWriter, status int, code, detail string) int {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = w.Write(problemBody(status, code, detail))
	return status
}

// problemBody is a problem document in the ledger API's shape: its type
// is https://surge.dev/problems/<code>, its title the code in words.
func problemBody(status int, code, detail string) []byte {
	b, _ := json.Marshal(problemJSON{Type: problemTypes + code, Title: titleOf(code), Status: status, Code: code, Detail: detail})
	return b
}

// problemTypes prefixes every problem's type URI, as on the ledger API.
const problemTypes = "https://surge.dev/problems/"

// titleOf spells a code as the ledger API titles it: "reservation_not_held"
// is "Reservation not held"; "internal" is "Internal error".
func titleOf(code string) string {
	if code == "internal" {
		return "Internal error"
	}
	title := strings.ReplaceAll(code, "_", " ")
	if title == "" {
		return title
	}
	return strings.ToUpper(title[:1]) + title[1:]
}

func statusText(code int) string { return strconv.Itoa(code) }
