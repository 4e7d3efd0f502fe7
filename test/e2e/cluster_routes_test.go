package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// clusterKey is the API key of the nodes of TestClusterServesOnAnyNode;
// clusterKVValue, their --kv-max-value.
const (
	clusterKey     = "k3y"
	clusterKVValue = 64 << 10
)

// The routes that span partitions answer on any node of a cluster as on a
// single node: ticketing's cancel and seat map, key-value ranges, and every
// key-value exchange of kvScript.
func TestClusterServesOnAnyNode(t *testing.T) {
	c := startCluster(t, 1, 2, "--api-key", clusterKey, "--kv-max-value", strconv.Itoa(clusterKVValue))
	t.Run("cancel and seat map", c.cancelsAndSeatMaps)
	t.Run("key-value ranges", c.ranges)
	t.Run("key-value as one node", c.kvAsOneNode)
}

// A reservation filed on one node is seen on another's seat map, and
// cancelled there with the hold token the first node gave (every node
// signs with the cluster's secret), under the single node's rules: no
// token 401, a wrong one 403, a second cancel a replay; its seats are
// free again on every node.
func (c *clusterNodes) cancelsAndSeatMaps(t *testing.T) {
	n0, n1 := c.nodes[0].c, c.nodes[1].c
	mustCreateEvent(t, n0.withKey(clusterKey), Event{EventName: "gig", Artist: "band",
		Areas: []EventArea{{AreaID: "A", Price: 100, RowCount: 1, ColCount: 4}}})
	r, err := n0.do(http.MethodPost, "/v1/event/gig/reservation", ReserveReq{UserID: "fan", EventID: "gig", AreaID: "A", NumOfSeats: 2, Type: "RANDOM"}, nil)
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("reserve: %v %v", r, err)
	}
	id, token := string(r.Body), r.Header.Get("Reservation-Token")
	if held := areaSeats(t, n1.withKey(clusterKey), "gig", "A"); len(held) != 2 || held[Seat{0, 1}] != id {
		t.Fatalf("the seat map on the other node: %v, want 2 seats of %s", held, id)
	}
	var public AreaSeats
	if r, err := n1.do(http.MethodGet, "/v1/event/gig/area/A", nil, &public); err != nil || r.Status != http.StatusOK || len(public.Taken) != 2 || public.Taken[0].ReservationID != "" {
		t.Fatalf("the public seat map: %v %+v %v", r, public, err)
	}
	cancel := func(cl *Client, token string) *Response {
		t.Helper()
		var res Reservation
		r, err := cl.withHeader("Reservation-Token", token).do(http.MethodDelete, "/v1/reservation/"+id, nil, &res)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == http.StatusOK && res.State != "CANCELLED" {
			t.Errorf("cancelled reservation: %+v", res)
		}
		return r
	}
	if r := cancel(n1, ""); r.Status != http.StatusUnauthorized {
		t.Errorf("cancel with neither token nor key: %v", r)
	}
	if r := cancel(n1, "x"+token); r.Status != http.StatusForbidden {
		t.Errorf("cancel with a wrong token: %v", r)
	}
	if r := cancel(n1, token); r.Status != http.StatusOK {
		t.Fatalf("cancel on the other node with the hold token: %v", r)
	}
	if r := cancel(n0, token); r.Status != http.StatusOK {
		t.Errorf("a second cancel (a replay): %v", r)
	}
	for _, n := range []*Client{n0, n1} {
		if held := areaSeats(t, n.withKey(clusterKey), "gig", "A"); len(held) != 0 {
			t.Errorf("seats held after the cancel: %v", held)
		}
	}
	if r, err := n1.withKey(clusterKey).do(http.MethodDelete, "/v1/reservation/00000000-0000-4000-8000-000000000000", nil, nil); err != nil || r.Status != http.StatusNotFound {
		t.Errorf("cancelling an unknown reservation: %v %v", r, err)
	}
	if r, err := n0.do(http.MethodGet, "/v1/event/gig/area/Z", nil, nil); err != nil || r.Status != http.StatusNotFound {
		t.Errorf("the seat map of an unknown area: %v %v", r, err)
	}
}

// A range read on any node is every partition's part merged in key order,
// one chunk per entry as on a single node, with what the acknowledged PUTs
// and DELETEs left: 1,800 entries over 6 partitions, so that each
// partition's part takes more than one page.
func (c *clusterNodes) ranges(t *testing.T) {
	const entries, workers = 1800, 12
	key := func(i int) string { return fmt.Sprintf("rg-%04d", i) }
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < entries; i += workers {
				cl := c.nodes[i%2].c.withKey(clusterKey)
				if st := statusOf(cl.kvPut(key(i), []byte(fmt.Sprintf("value %d\nof %s", i, key(i))))); st != http.StatusCreated {
					t.Errorf("PUT %s: %d", key(i), st)
				}
				if i%100 == 7 {
					if st := statusOf(cl.raw(http.MethodDelete, "/v0/entity?id="+key(i), "", nil)); st != http.StatusAccepted {
						t.Errorf("DELETE %s: %d", key(i), st)
					}
				}
			}
		})
	}
	for _, outside := range []string{"rf-0", "rg.", "rh-0"} {
		if st := statusOf(c.nodes[0].c.withKey(clusterKey).kvPut(outside, []byte("x"))); st != http.StatusCreated {
			t.Fatalf("PUT %s: %d", outside, st)
		}
	}
	wg.Wait()
	chunks := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			if i%100 != 7 {
				out = append(out, fmt.Sprintf("%s\nvalue %d\nof %s", key(i), i, key(i)))
			}
		}
		return out
	}
	want := chunks(0, entries)
	auth := "Authorization: Bearer " + clusterKey
	for n, s := range c.nodes {
		began := time.Now()
		st, chunked, got := kvRangeChunks(t, s.url, "start=rg-&end=rg.", auth)
		t.Logf("node %d: a range of %d entries read in %v", n, len(got), time.Since(began).Round(time.Millisecond))
		if st != http.StatusOK || !chunked || !slices.Equal(got, want) {
			t.Errorf("node %d: range of %d entries: %d chunked %v, %d chunks, want %d", n, entries, st, chunked, len(got), len(want))
		}
	}
	if st, _, got := kvRangeChunks(t, c.nodes[1].url, "start=rg-0105&end=rg-0109", auth); st != http.StatusOK || !slices.Equal(got, chunks(105, 109)) {
		t.Errorf("a range of 4 keys, one deleted: %d %q, want %q", st, got, chunks(105, 109))
	}
	if st, _, _ := kvRangeChunks(t, c.nodes[1].url, "start=rg-"); st != http.StatusUnauthorized {
		t.Errorf("a range without the key: %d", st)
	}
}

// statusOf is a reply's status, 0 if there was none.
func statusOf(r *Response, err error) int {
	if err != nil {
		return 0
	}
	return r.Status
}
