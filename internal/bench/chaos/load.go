package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// The load's shape: accounts the transfers run between (spread over the
// shards by hash, so many transfers cross shards), their funding, the
// event whose seats are reserved and paid for, and the key-value keys
// each worker owns.
const (
	accounts    = 16
	funding     = 1_000_000
	event       = "chaos-gig"
	area        = "floor"
	seatRows    = 40
	seatCols    = 50
	keysPerWork = 8
)

func account(i int) string { return fmt.Sprintf("chaos-%d", i) }

// client is a plain HTTP/JSON client.
type client struct {
	base string
	hc   *http.Client
}

func newClient(base string) *client {
	return &client{base: base, hc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
}

// do sends body (JSON unless raw) and returns the status and reply; err
// means no reply came: the operation's outcome is unknown.
func (c *client) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if _, raw := body.([]byte); !raw && body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

type transferReq struct {
	ID      string `json:"id"`
	From    string `json:"from"`
	To      string `json:"to"`
	Amount  int64  `json:"amount"`
	Pending bool   `json:"pending,omitempty"`
}

// setup opens and funds the accounts and creates the event (repeatable).
func setup(ctx context.Context, c *client) error {
	for i := range accounts {
		if st, b, err := c.do(ctx, http.MethodPost, "/v1/accounts", map[string]string{"id": account(i), "currency": "USD"}); err != nil || st/100 != 2 && st != http.StatusConflict {
			return fmt.Errorf("open %s: %d %s %v", account(i), st, b, err)
		}
		req := transferReq{ID: "chaos-fund-" + account(i), From: "@world", To: account(i), Amount: funding}
		if st, b, err := c.do(ctx, http.MethodPost, "/v1/transfers", req); err != nil || st/100 != 2 {
			return fmt.Errorf("fund %s: %d %s %v", account(i), st, b, err)
		}
	}
	ev := map[string]any{"eventName": event, "artist": "chaos", "organizer": account(0),
		"areas": []map[string]any{{"areaId": area, "price": 10, "rowCount": seatRows, "colCount": seatCols}}}
	if st, b, err := c.do(ctx, http.MethodPost, "/v1/event", ev); err != nil || st/100 != 2 && st != http.StatusConflict {
		return fmt.Errorf("create event: %d %s %v", st, b, err)
	}
	return nil
}

// worker is one closed-loop client.
type worker struct {
	id, cycle int
	c         *client
	h         *history
	rng       *rand.Rand
	acked     chan<- struct{}
	n         int
}

func (w *worker) loop(ctx context.Context) {
	for ctx.Err() == nil {
		w.n++
		var ok bool
		switch p := w.rng.IntN(100); {
		case p < 40:
			ok = w.transfer(ctx)
		case p < 50:
			ok = w.batch(ctx)
		case p < 60:
			ok = w.twoPhase(ctx)
		case p < 70:
			ok = w.reserve(ctx)
		default:
			ok = w.kv(ctx)
		}
		if ok {
			select {
			case w.acked <- struct{}{}:
			case <-ctx.Done():
			}
		}
	}
}

func (w *worker) newID(kind string) string {
	return fmt.Sprintf("chaos-%s-c%d-w%d-%d", kind, w.cycle, w.id, w.n)
}

func (w *worker) pair() (string, string) {
	a := w.rng.IntN(accounts)
	b := (a + 1 + w.rng.IntN(accounts-1)) % accounts
	return account(a), account(b)
}

// outcomeOf classifies a reply: 2xx acknowledged, 4xx refused (nothing
// was done), anything else (no reply, 5xx) unknown.
func outcomeOf(status int, err error) outcome {
	switch {
	case err != nil || status == 0 || status >= 500:
		return unknown
	case status/100 == 2:
		return acked
	default:
		return refused
	}
}

func (w *worker) transfer(ctx context.Context) bool {
	from, to := w.pair()
	t := transferReq{ID: w.newID("t"), From: from, To: to, Amount: 1 + w.rng.Int64N(100)}
	st, _, err := w.c.do(ctx, http.MethodPost, "/v1/transfers", t)
	o := outcomeOf(st, err)
	w.h.transfer(opTransfer, t, o)
	return o == acked
}

// batch is an atomic batch of three transfers: all or none.
func (w *worker) batch(ctx context.Context) bool {
	var items []transferReq
	for range 3 {
		from, to := w.pair()
		items = append(items, transferReq{ID: w.newID(fmt.Sprintf("b%d", len(items))), From: from, To: to, Amount: 1 + w.rng.Int64N(100)})
	}
	st, body, err := w.c.do(ctx, http.MethodPost, "/v1/transfers/batch", map[string]any{"atomic": true, "transfers": items})
	o := outcomeOf(st, err)
	if o == acked {
		var reply struct {
			Results []struct{ Status int } `json:"results"`
		}
		if json.Unmarshal(body, &reply) != nil || len(reply.Results) != len(items) || reply.Results[0].Status/100 != 2 {
			o = refused // aborted as a whole
		}
	}
	for _, t := range items {
		w.h.transfer(opBatch, t, o)
	}
	return o == acked
}

// twoPhase holds money, then posts or voids the hold.
func (w *worker) twoPhase(ctx context.Context) bool {
	from, to := w.pair()
	t := transferReq{ID: w.newID("p"), From: from, To: to, Amount: 1 + w.rng.Int64N(100), Pending: true}
	st, _, err := w.c.do(ctx, http.MethodPost, "/v1/transfers", t)
	if o := outcomeOf(st, err); o != acked {
		w.h.transfer(opTwoPhase, t, o)
		return false
	}
	action := "post"
	if w.rng.IntN(2) == 0 {
		action = "void"
	}
	st, _, err = w.c.do(ctx, http.MethodPost, "/v1/transfers/"+t.ID+"/"+action, map[string]any{})
	w.h.twoPhase(t, action, outcomeOf(st, err))
	return outcomeOf(st, err) == acked
}

type reservation struct {
	ID    string `json:"reservationId"`
	State string `json:"state"`
	Seats []seat `json:"seats"`
}

type seat struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// reserve reserves seats and pays for them through the ledger.
func (w *worker) reserve(ctx context.Context) bool {
	// A reservation is paid from its user's account.
	from, _ := w.pair()
	req := map[string]any{"userId": from, "eventId": event, "areaId": area, "numOfSeats": 1 + w.rng.IntN(2), "type": "RANDOM"}
	st, body, err := w.c.do(ctx, http.MethodPost, "/v1/event/"+event+"/reservation?wait=5s", req)
	var r reservation
	if outcomeOf(st, err) != acked || json.Unmarshal(body, &r) != nil || r.State != "RESERVED" {
		w.h.count(opReserve, outcomeOf(st, err))
		return false
	}
	st, _, err = w.c.do(ctx, http.MethodPost, "/v1/reservation/"+r.ID+"/pay", map[string]string{"account": from})
	w.h.payment(r, outcomeOf(st, err))
	return outcomeOf(st, err) == acked
}

// kv writes or deletes one of the worker's keys.
func (w *worker) kv(ctx context.Context) bool {
	key := fmt.Sprintf("chaos-w%d-k%d", w.id, w.rng.IntN(keysPerWork))
	var st int
	var err error
	value := ""
	if w.rng.IntN(5) == 0 {
		st, _, err = w.c.do(ctx, http.MethodDelete, "/v0/entity?id="+key, nil)
	} else {
		value = w.newID("v")
		st, _, err = w.c.do(ctx, http.MethodPut, "/v0/entity?id="+key, []byte(value))
	}
	o := outcomeOf(st, err)
	w.h.kv(key, value, o)
	return o == acked
}

// outcome is what a client knows of an operation.
type outcome uint8

const (
	acked   outcome = iota // a 2xx reply: it must be there
	refused                // a 4xx reply: it must not be there
	unknown                // no reply or 5xx: either
)

// op names the kinds of operations in the table.
type op uint8

const (
	opTransfer op = iota
	opBatch
	opTwoPhase
	opReserve
	opKV
	numOps
)

var opNames = [numOps]string{"transfer", "atomic batch item", "two-phase", "reservation+payment", "key-value write"}

// history is what the clients know, shared by the workers.
type history struct {
	mu        sync.Mutex
	transfers map[string]transferRec
	holds     map[string]string // two-phase id → post/void, acknowledged
	paid      []reservation
	keys      map[string]keyRec
	counts    [numOps][3]int
}

type transferRec struct {
	op  op
	req transferReq
	out outcome
}

// keyRec is a key's last acknowledged state and the unknown writes since.
type keyRec struct {
	value   string // "" for deleted
	pending []string
}

func newHistory() *history {
	return &history{transfers: map[string]transferRec{}, holds: map[string]string{}, keys: map[string]keyRec{}}
}

func (h *history) count(o op, out outcome) {
	h.mu.Lock()
	h.counts[o][out]++
	h.mu.Unlock()
}

func (h *history) transfer(o op, t transferReq, out outcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[o][out]++
	h.transfers[t.ID] = transferRec{op: o, req: t, out: out}
}

func (h *history) twoPhase(t transferReq, action string, out outcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[opTwoPhase][out]++
	h.transfers[t.ID] = transferRec{op: opTwoPhase, req: t, out: acked}
	if out == acked {
		h.holds[t.ID] = action
	}
}

func (h *history) payment(r reservation, out outcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[opReserve][out]++
	if out == acked {
		h.paid = append(h.paid, r)
	}
}

func (h *history) kv(key, value string, out outcome) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[opKV][out]++
	rec := h.keys[key]
	switch out {
	case acked:
		rec = keyRec{value: value}
	case unknown:
		rec.pending = append(rec.pending, value)
	}
	h.keys[key] = rec
}
