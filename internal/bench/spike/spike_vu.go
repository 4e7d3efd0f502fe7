package spike

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/load"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/valyala/fastjson"
)

// Retry pacing for 503 replies. An overloaded server is given a doubling
// pause, whatever its Retry-After: a crowd at a sale presses on sooner
// than a polite client would (bench transfer's VUs wait Retry-After). A long poll that ran out (the server answers 503 after
// holding the GET for its wait, 10 s in ticket-master; surge says
// not_decided) is repeated at once.
const (
	spikeBackoff0     = 20 * time.Millisecond
	spikeBackoffMax   = time.Second
	longPollRanOut    = time.Second
	procFlushSamples  = 256
	maxReservationIDs = 64 // longest reservation id accepted in a reply
)

// spikeRun is what the workers of one run share.
type spikeRun struct {
	cfg    SpikeConfig
	client *httpc.HTTPClient
	plan   *spikePlan
	runID  string
	book   *seatBook
	// proc gathers the processing times the workers hand over in bulk.
	procMu sync.Mutex
	proc   *measure.Recorder
	// vus are the workers, for their tallies once the run is over.
	vus []*spikeVU
}

func newSpikeRun(cfg SpikeConfig, client *httpc.HTTPClient, plan *spikePlan, runID string) *spikeRun {
	return &spikeRun{
		cfg:    cfg,
		client: client,
		plan:   plan,
		runID:  runID,
		book:   newSeatBook(plan, cfg.Rows, cfg.Cols),
		proc:   measure.NewRecorder(time.Time{}),
	}
}

func (s *spikeRun) mode() string {
	if s.cfg.Wait > 0 {
		return "each a POST ?wait=" + s.cfg.Wait.String() + " (long-poll GET if not final by then)"
	}
	return "each a POST then a long-poll GET"
}

// prepare makes worker vu; Closed.Run calls it for one VU at a time.
func (s *spikeRun) prepare(ctx context.Context, vu *load.VU) (load.Iteration, error) {
	v := &spikeVU{
		s:     s,
		ctx:   ctx,
		ep:    s.client.Endpoint(ctx, http.MethodPost, ""),
		user:  "spike-" + s.runID + "-" + strconv.Itoa(vu.ID),
		tally: spikeTally{outcomes: map[string]int64{}},
	}
	s.vus = append(s.vus, v)
	return v.iterate, nil
}

// closeEndpoints gives the workers' connections back for the checks.
func (s *spikeRun) closeEndpoints() {
	for _, v := range s.vus {
		v.ep.Close()
	}
}

// addProcessing records processing times handed over by a worker.
func (s *spikeRun) addProcessing(samples []time.Duration) {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	var zero time.Time
	for _, d := range samples {
		s.proc.Record(zero, zero.Add(d), measure.Outcome{})
	}
}

// spikeTally is one worker's count of what its reservations came to.
type spikeTally struct {
	// outcomes counts reservations by final state and, for FAILED, the
	// reason's code: "RESERVED", "FAILED NOT_AVAILABLE".
	outcomes map[string]int64
	// retries counts requests sent again after a 503; shed counts the
	// 503 overloaded replies (the server refused the request at once).
	retries, shed int64
	// lastSale is when the last RESERVED reply arrived.
	lastSale time.Time
	// sales are the RESERVED replies' arrival times and seat counts, for
	// the sales curve (at most one per seat on sale).
	sales []sale
}

type sale struct {
	at    time.Time
	seats int
}

// spikeVU is one worker: it reserves, waits for the outcome, judges it.
type spikeVU struct {
	s   *spikeRun
	ctx context.Context
	// ep sends every request of the worker, on one connection.
	ep    *httpc.Endpoint
	user  string
	body  []byte
	uri   []byte
	proc  []time.Duration // processing times not yet handed to s.proc
	tally spikeTally
	// parser decodes replies; res is the last one decoded. Both keep
	// their buffers from reply to reply.
	parser fastjson.Parser
	res    reservationJSON
	// likely is what the next reply most likely holds: the request's
	// event, area and reservation id, the last failure's reason. A
	// decoded value equal to one is that string, not a new copy.
	likely struct{ event, area, id, reason [1]string }
}

// replyStates are the states a reservation reply holds.
var replyStates = []string{"RESERVED", "FAILED", "PROCESSING"}

// reservationJSON is the part of a reservation reply the run checks (in
// the JSON shape of the API, which the tests' server writes).
type reservationJSON struct {
	ReservationID string      `json:"reservationId"`
	EventID       string      `json:"eventId"`
	AreaID        string      `json:"areaId"`
	State         string      `json:"state"`
	FailedReason  string      `json:"failedReason"`
	Seats         []spikeSeat `json:"seats"`
}

type spikeSeat struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

func (v *spikeVU) iterate(ctx context.Context, vu *load.VU) {
	a := vu.Rand.IntN(len(v.s.plan.areas))
	n := 1 + vu.Rand.IntN(v.s.cfg.MaxSeats)
	start := time.Now()
	var processing time.Duration
	id, failure := v.reserve(a, n, &processing)
	if failure.Failure != "" && ctx.Err() != nil {
		return // interrupted: not the server's failure
	}
	if failure.Failure == "" {
		failure = v.judge(a, n, id, time.Now())
	}
	vu.Record(start, failure)
	v.proc = append(v.proc, processing)
	if len(v.proc) == procFlushSamples {
		v.flush()
	}
}

// flush hands the pending processing times over.
func (v *spikeVU) flush() {
	v.s.addProcessing(v.proc)
	v.proc = v.proc[:0]
}

// reserve asks for n seats of area a and waits for the outcome, which it
// leaves decoded in v.res; it returns the reservation id, or a failure
// when a request failed. processing accumulates the time of every
// exchange.
func (v *spikeVU) reserve(a, n int, processing *time.Duration) (string, measure.Outcome) {
	area := &v.s.plan.areas[a]
	v.expect(area, "")
	body := append(v.body[:0], area.bodyHead...)
	body = append(body, v.user...)
	body = append(body, `","numOfSeats":`...)
	body = strconv.AppendInt(body, int64(n), 10)
	v.body = append(body, '}')
	status, reply, err := v.call(http.MethodPost, area.post, v.body, processing)
	if o := failedCall(status, reply, err); o.Failure != "" {
		return "", o
	}
	id, final, err := v.postReply(reply)
	if err != nil {
		return "", measure.Outcome{Failure: "200 bad_reply", Detail: err.Error()}
	}
	if final {
		return id, measure.Outcome{}
	}
	v.expect(area, id)
	v.uri = append(append(v.uri[:0], "/v1/reservation/"...), id...)
	status, reply, err = v.call(http.MethodGet, v.uri, nil, processing)
	if o := failedCall(status, reply, err); o.Failure != "" {
		return "", o
	}
	if err := v.decode(reply); err != nil {
		return "", measure.Outcome{Failure: "200 bad_reply", Detail: err.Error()}
	}
	if v.res.ReservationID != "" && v.res.ReservationID != id {
		return "", measure.Outcome{Failure: "200 wrong_reservation",
			Detail: fmt.Sprintf("asked for reservation %s, got %s", id, v.res.ReservationID)}
	}
	return id, measure.Outcome{}
}

// expect notes what the next reply likely holds: area's names and
// reservation id.
func (v *spikeVU) expect(area *spikeArea, id string) {
	v.likely.event[0], v.likely.area[0], v.likely.id[0] = area.event, area.id, id
}

// failedCall turns a failed exchange into its Outcome (none for a 200).
func failedCall(status int, reply []byte, err error) measure.Outcome {
	switch {
	case err != nil:
		return measure.Outcome{Failure: httpc.ErrorKey(err), Detail: err.Error()}
	case status != http.StatusOK:
		return measure.Outcome{Failure: httpc.StatusKey(status, reply), Detail: httpc.ProblemDetail(reply)}
	}
	return measure.Outcome{}
}

// postReply reads the reply to a reservation POST: ticket-master's bare
// reservation id (text/plain), or the reservation as JSON, decoded into
// v.res and final unless it is still PROCESSING.
func (v *spikeVU) postReply(reply []byte) (id string, final bool, err error) {
	if text := bytes.TrimSpace(reply); len(text) == 0 || text[0] != '{' {
		id = string(text)
	} else {
		if err := v.decode(reply); err != nil {
			return "", false, err
		}
		id, final = v.res.ReservationID, v.res.State != "PROCESSING"
	}
	if !validReservationID(id) {
		return "", false, fmt.Errorf("reservation id %q is not 1 to %d characters from A-Z a-z 0-9 - _", id, maxReservationIDs)
	}
	return id, final, nil
}

// validReservationID keeps a server's reply from steering the GET that
// follows anywhere but /v1/reservation/{id}.
func validReservationID(id string) bool {
	if id == "" || len(id) > maxReservationIDs {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// decode decodes a reservation reply into v.res. It is on the hot path:
// fastjson's reusable parser costs the shared machine a fraction of
// encoding/json's reflection.
func (v *spikeVU) decode(reply []byte) error {
	if err := v.decodeInto(reply); err != nil {
		return fmt.Errorf("decoding the reservation: %w", err)
	}
	return nil
}

func (v *spikeVU) decodeInto(reply []byte) error {
	doc, err := v.parser.ParseBytes(reply)
	if err != nil {
		return err
	}
	if doc.Type() != fastjson.TypeObject {
		return fmt.Errorf("a %s, not an object", doc.Type())
	}
	r := &v.res
	*r = reservationJSON{Seats: r.Seats[:0]}
	l := &v.likely
	for _, f := range []struct {
		key    string
		dst    *string
		likely []string
	}{{"reservationId", &r.ReservationID, l.id[:]}, {"eventId", &r.EventID, l.event[:]}, {"areaId", &r.AreaID, l.area[:]},
		{"state", &r.State, replyStates}, {"failedReason", &r.FailedReason, l.reason[:]}} {
		if *f.dst, err = stringField(doc, f.key, f.likely); err != nil {
			return err
		}
	}
	l.reason[0] = r.FailedReason
	seats := doc.Get("seats")
	if seats == nil || seats.Type() == fastjson.TypeNull {
		return nil
	}
	list, err := seats.Array()
	if err != nil {
		return fmt.Errorf("seats: %w", err)
	}
	for _, s := range list {
		var seat spikeSeat
		if seat.Row, err = intField(s, "row"); err != nil {
			return err
		}
		if seat.Col, err = intField(s, "col"); err != nil {
			return err
		}
		r.Seats = append(r.Seats, seat)
	}
	return nil
}

// stringField returns the string at key of an object; "" if absent or
// null. A value equal to one of likely is that string: no copy.
func stringField(obj *fastjson.Value, key string, likely []string) (string, error) {
	f := obj.Get(key)
	if f == nil || f.Type() == fastjson.TypeNull {
		return "", nil
	}
	b, err := f.StringBytes()
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	for _, k := range likely {
		if string(b) == k {
			return k, nil
		}
	}
	return string(b), nil
}

// intField returns the integer at key of a seat object, which must have it.
func intField(seat *fastjson.Value, key string) (int, error) {
	if seat.Type() != fastjson.TypeObject {
		return 0, fmt.Errorf("seat %s is not an object", seat)
	}
	f := seat.Get(key)
	if f == nil {
		return 0, fmt.Errorf("seat %s has no %s", seat, key)
	}
	n, err := f.Int()
	if err != nil {
		return 0, fmt.Errorf("seat %s: %s: %w", seat, key, err)
	}
	return n, nil
}

// call sends one request, again while the server answers 503 (up to
// cfg.Retries times), and adds the duration of every exchange to
// processing: from sending the request to having its reply, which for
// replies of a few hundred bytes is the server's time to the first byte
// (httpstat's ServerProcessing) plus microseconds.
func (v *spikeVU) call(method string, uri, body []byte, processing *time.Duration) (int, []byte, error) {
	backoff := spikeBackoff0
	for attempt := 0; ; attempt++ {
		t := time.Now()
		status, reply, err := v.ep.SendURI(method, uri, body)
		took := time.Since(t)
		*processing += took
		if err != nil || status != http.StatusServiceUnavailable || attempt == v.s.cfg.Retries {
			return status, reply, err
		}
		v.tally.retries++
		code, _ := httpc.JSONString(reply, "code")
		if code == "overloaded" {
			v.tally.shed++
		}
		if took >= longPollRanOut || code == "not_decided" {
			continue
		}
		if err := sleepCtx(v.ctx, backoff); err != nil {
			return 0, nil, err
		}
		backoff = min(2*backoff, spikeBackoffMax)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// judge checks the decoded final reservation id for n seats of area a,
// which arrived at now, and tallies it: a RESERVED one's seats go into the
// seat book (where a seat sold twice is a double booking). A reply that
// contradicts the request is a failure.
func (v *spikeVU) judge(a, n int, id string, now time.Time) measure.Outcome {
	r := &v.res
	area := &v.s.plan.areas[a]
	if (r.EventID != "" && r.EventID != area.event) || (r.AreaID != "" && r.AreaID != area.id) {
		return measure.Outcome{Failure: "200 wrong_area", Detail: fmt.Sprintf("asked for %s/%s, got %s/%s", area.event, area.id, r.EventID, r.AreaID)}
	}
	switch r.State {
	case "RESERVED":
		v.tally.outcomes["RESERVED"]++
		v.tally.lastSale = now
		v.tally.sales = append(v.tally.sales, sale{now, len(r.Seats)})
		v.s.book.claim(a, r.Seats, id)
		if problem := seatsProblem(r.Seats, n, v.s.cfg.Rows, v.s.cfg.Cols); problem != "" {
			return measure.Outcome{Failure: "200 bad_seats", Detail: fmt.Sprintf("reservation %s: %s", id, problem)}
		}
	case "FAILED":
		v.tally.outcomes["FAILED "+reasonCode(r.FailedReason)]++
	default:
		return measure.Outcome{Failure: "200 not_final", Detail: fmt.Sprintf("reservation %s is %q", id, r.State)}
	}
	return measure.Outcome{}
}

// seatsProblem says what is wrong with the seats of a RANDOM reservation
// for n seats in a rows×cols area, or "" if they are n adjacent seats of
// one row, left to right.
func seatsProblem(seats []spikeSeat, n, rows, cols int) string {
	if len(seats) != n {
		return fmt.Sprintf("%d seats for a request of %d", len(seats), n)
	}
	for i, s := range seats {
		switch {
		case s.Row < 0 || s.Row >= rows || s.Col < 0 || s.Col >= cols:
			return fmt.Sprintf("seat (%d, %d) is outside the %d×%d area", s.Row, s.Col, rows, cols)
		case i > 0 && (s.Row != seats[0].Row || s.Col != seats[i-1].Col+1):
			return fmt.Sprintf("seats %v are not adjacent in one row", seats)
		}
	}
	return ""
}

// reasonCode extracts the code from a failedReason in ticket-master's
// "[CODE]: message" form; "other" if it has none.
func reasonCode(reason string) string {
	if rest, ok := strings.CutPrefix(reason, "["); ok {
		if code, _, ok := strings.Cut(rest, "]"); ok && code != "" && !strings.ContainsAny(code, " \t") {
			return code
		}
	}
	return "other"
}
