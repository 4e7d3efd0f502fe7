package e2e

import (
	"net/http"
	"testing"
)

// clusterKey is the API key of the nodes of TestClusterServesTicketsOnAnyNode.
const clusterKey = "k3y"

// A reservation filed on one node is seen on another's seat map, and
// cancelled there with the hold token the first node gave (every node
// signs with the cluster's secret), under the single node's rules: no
// token 401, a wrong one 403, a second cancel a replay; its seats are
// free again on every node.
func TestClusterServesTicketsOnAnyNode(t *testing.T) {
	c := startCluster(t, 1, 2, "--api-key", clusterKey)
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
