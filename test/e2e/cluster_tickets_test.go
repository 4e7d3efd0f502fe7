package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The sale of TestClusterSellsSeatsOnce: three areas, their prices, a
// per-user limit, and users each driven by two workers at once.
var (
	saleAreas  = map[string]int64{"A": 50, "B": 80, "C": 30}
	saleLimit  = 16
	saleUsers  = 4
	saleFund   = int64(1_000_000)
	saleWorker = 8
)

// Ticket sales through every node of a cluster, one node killed with
// kill -9 halfway, clients retrying on the others: every reservation paid
// is debited exactly once from its user to the organizer, the seats sold
// are exactly the paid reservations' seats, no seat is held twice, no
// user ever holds more seats of the event than its limit, and the
// balances and credits in flight sum to 0 on every node.
func TestClusterSellsSeatsOnce(t *testing.T) {
	c := startCluster(t, 1, 3)
	for i, id := range append([]string{"org"}, saleUserIDs()...) {
		if r := c.do(i, http.MethodPost, "/v1/accounts", NewAccount{ID: id, Currency: "USD"}, nil); r.Status >= 300 {
			t.Fatalf("creating %s: %s", id, r)
		}
		if id != "org" {
			if r := c.do(i+1, http.MethodPost, "/v1/transfers", TransferReq{ID: "fund-" + id, From: "@world", To: id, Amount: saleFund}, nil); r.Status >= 300 {
				t.Fatalf("funding %s: %s", id, r)
			}
		}
	}
	ev := Event{EventName: "sale", Artist: "band", Organizer: "org", PerUserSeatLimit: saleLimit}
	for _, a := range []string{"A", "B", "C"} {
		ev.Areas = append(ev.Areas, EventArea{AreaID: a, Price: saleAreas[a], RowCount: 4, ColCount: 6})
	}
	mustCreateEvent(t, c.nodes[1].c, ev)
	paid, limited := c.sell(t, 12, func() {
		c.alive[2].Store(false)
		c.nodes[2].kill()
	})
	if limited == 0 {
		t.Error("no reservation met the per-user limit")
	}
	c.auditSale(t, paid)
}

func saleUserIDs() []string {
	var ids []string
	for u := range saleUsers {
		ids = append(ids, fmt.Sprint("fan", u))
	}
	return ids
}

// sell has the workers reserve 1 to 3 seats of the sale, each through the
// next live node, then pay for two reservations in three through another
// node and cancel the third; kill is called halfway. It returns the
// reservations whose payment was acknowledged, and how many reservations
// met the limit.
func (c *clusterNodes) sell(t *testing.T, each int, kill func()) (map[string]Reservation, int64) {
	var mu sync.Mutex
	paid := map[string]Reservation{}
	var done, limited atomic.Int64
	lat := &latencies{d: map[string][]time.Duration{}}
	var wg sync.WaitGroup
	half := make(chan struct{})
	var once sync.Once
	for w := range saleWorker {
		wg.Go(func() {
			user := fmt.Sprint("fan", w%saleUsers)
			for n := range each {
				res, ok := c.buy(t, lat, w+n, user, n)
				if ok {
					mu.Lock()
					paid[res.ReservationID] = res
					mu.Unlock()
				}
				if strings.HasPrefix(res.FailedReason, "[SEAT_LIMIT]") {
					limited.Add(1)
				}
				if done.Add(1) == int64(saleWorker*each/2) {
					once.Do(func() { close(half) })
				}
			}
		})
	}
	<-half
	kill()
	wg.Wait()
	t.Logf("%d payments acknowledged, %d reservations over the limit", len(paid), limited.Load())
	lat.log(t)
	return paid, limited.Load()
}

// buy reserves through node i and pays (or cancels) through the next one;
// it returns the reservation if its payment was acknowledged.
func (c *clusterNodes) buy(t *testing.T, lat *latencies, i int, user string, n int) (Reservation, bool) {
	req := ReserveReq{UserID: user, EventID: "sale", AreaID: []string{"A", "B", "C"}[n%3], NumOfSeats: 1 + n%3, Type: "RANDOM"}
	var res Reservation
	began := time.Now()
	defer func() { lat.add("reserve", began) }()
	c.onLive(i, func(s *server) bool {
		id, _, err := reserve(s.c, req)
		if err == nil {
			res, err = awaitReservation(s.c, id)
		}
		return err == nil
	})
	switch {
	case res.State == "FAILED":
		if !strings.HasPrefix(res.FailedReason, "[SEAT_LIMIT]") && !strings.HasPrefix(res.FailedReason, "[NOT_AVAILABLE]") {
			t.Errorf("reservation %s failed: %s", res.ReservationID, res.FailedReason)
		}
		return res, false
	case res.State != "RESERVED":
		t.Errorf("reservation %+v", res)
		return res, false
	case n%3 == 2:
		if r := c.do(i+1, http.MethodDelete, "/v1/reservation/"+res.ReservationID, nil, nil); r.Status != http.StatusOK {
			t.Errorf("cancel %s: %s", res.ReservationID, r)
		}
		return res, false
	}
	var out Reservation
	paying := time.Now()
	r := c.do(i+1, http.MethodPost, "/v1/reservation/"+res.ReservationID+"/pay", map[string]string{"account": user}, &out)
	lat.add("pay", paying)
	if r.Status != http.StatusOK || out.State != "PAID" || out.PaymentID == "" {
		t.Errorf("pay %s: %s %+v", res.ReservationID, r, out)
		return res, false
	}
	return out, true
}

// auditSale checks the sale against the acknowledged payments, through
// the surviving nodes.
func (c *clusterNodes) auditSale(t *testing.T, paid map[string]Reservation) {
	spent := map[string]int64{}
	var sold int64
	for id, res := range paid {
		var tr Transfer
		r := c.do(len(spent), http.MethodGet, "/v1/transfers/"+res.PaymentID, nil, &tr)
		amount := saleAreas[res.AreaID] * int64(len(res.Seats))
		if r.Status != http.StatusOK || tr.From != res.UserID || tr.To != "org" || tr.Amount != amount {
			t.Errorf("payment of %s: %s %+v, want %d from %s", id, r, tr, amount, res.UserID)
		}
		spent[res.UserID] += amount
		sold += amount
	}
	balances := map[string]int64{"org": sold}
	for _, u := range saleUserIDs() {
		balances[u] = saleFund - spent[u]
	}
	for id, want := range balances { // a payment debited twice would show
		var a Account
		if r := c.do(0, http.MethodGet, "/v1/accounts/"+id, nil, &a); r.Status != http.StatusOK || a.Balance != want {
			t.Errorf("%s: balance %d (%s), the acknowledged payments make it %d", id, a.Balance, r, want)
		}
	}
	c.auditSeats(t, paid)
	for i := range 2 {
		var st struct {
			BalanceSum map[string]int64 `json:"balance_sum"`
			InFlight   map[string]int64 `json:"credits_in_flight"`
		}
		if r := c.do(i, http.MethodGet, "/v1/ledger/stats", nil, &st); r.Status != http.StatusOK || st.BalanceSum["USD"]+st.InFlight["USD"] != 0 {
			t.Errorf("node %d: stats %s %+v do not sum to 0", i, r, st)
		}
	}
}

// auditSeats reads every area's seat map on a survivor: the seats sold
// are the paid reservations' seats, no seat has two holders, and no user
// holds more seats of the event than the limit.
func (c *clusterNodes) auditSeats(t *testing.T, paid map[string]Reservation) {
	sold := map[string]string{} // "area row/col" → reservation
	for id, res := range paid {
		for _, s := range res.Seats {
			sold[fmt.Sprintf("%s %d/%d", res.AreaID, s.Row, s.Col)] = id
		}
	}
	perUser := map[string]int{}
	holders := map[string]Reservation{}
	for area := range saleAreas {
		var a AreaSeats
		if r := c.do(0, http.MethodGet, "/v1/event/sale/area/"+area, nil, &a); r.Status != http.StatusOK {
			t.Fatalf("seat map of %s: %s", area, r)
		}
		areaSeats(t, c.nodes[0].c, "sale", area) // no seat held twice
		for _, s := range a.Taken {
			seat := fmt.Sprintf("%s %d/%d", area, s.Row, s.Col)
			if (s.State == "PAID") != (sold[seat] != "") || (s.State == "PAID" && sold[seat] != s.ReservationID) {
				t.Errorf("seat %s: %s by %s, the acknowledged payments say %q", seat, s.State, s.ReservationID, sold[seat])
			}
			delete(sold, seat)
			res, ok := holders[s.ReservationID]
			if !ok {
				c.do(1, http.MethodGet, "/v1/reservation/"+s.ReservationID, nil, &res)
				holders[s.ReservationID] = res
			}
			perUser[res.UserID]++
		}
	}
	for seat, id := range sold {
		t.Errorf("seat %s paid by %s is not sold", seat, id)
	}
	for u, n := range perUser {
		if n > saleLimit {
			t.Errorf("%s holds %d seats of the sale, over the limit of %d", u, n, saleLimit)
		}
	}
	t.Logf("seats held per user: %v", perUser)
}

// latencies collects how long calls took, retries included, to log their
// spread (a figure, not a check).
type latencies struct {
	mu sync.Mutex
	d  map[string][]time.Duration
}

func (l *latencies) add(what string, began time.Time) {
	l.mu.Lock()
	l.d[what] = append(l.d[what], time.Since(began))
	l.mu.Unlock()
}

func (l *latencies) log(t *testing.T) {
	for what, d := range l.d {
		slices.Sort(d)
		t.Logf("%s: %d calls, p50 %v, p90 %v, max %v", what, len(d), d[len(d)/2].Round(time.Millisecond),
			d[len(d)*9/10].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond))
	}
}
