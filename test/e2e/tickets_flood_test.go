package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// failureBudgetMB is the memory the flooded server may spend on failed
// reservations (SURGE_OUTCOME_MEMORY_MB, which a server without the
// setting ignores).
const failureBudgetMB = 4

// TestTicketFailureFloodKeepsHeapFlat floods a real server with
// reservations that fail — for a sold-out area and for an area that does
// not exist, the costlier kind to keep — and reads its live heap after a
// forced collection: after 160,000 more failures it has grown by less than
// a few budgets, where keeping every failure takes ~560 bytes each. The
// newest failure is still answered.
func TestTicketFailureFloodKeepsHeapFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("floods the server")
	}
	srv := launch(t, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--shards", "2"},
		[]string{fmt.Sprintf("SURGE_OUTCOME_MEMORY_MB=%d", failureBudgetMB)})
	srv.awaitReady("")
	c := srv.c
	mustCreateEvent(t, c, Event{EventName: "flood", Artist: "band", Areas: []EventArea{{AreaID: "A", Price: 1, RowCount: 1, ColCount: 1}}})
	if res := mustReserve(t, c, ReserveReq{UserID: "first", EventID: "flood", AreaID: "A", NumOfSeats: 1, Type: "RANDOM"}); res.State != "RESERVED" {
		t.Fatalf("the only seat: %+v", res)
	}

	flood(t, c, 40_000)
	before := liveHeap(t, srv)
	last := flood(t, c, 160_000)
	after := liveHeap(t, srv)
	t.Logf("live heap after 40,000 failures %.1f MiB, after 160,000 more %.1f MiB", mib(before), mib(after))
	if grown := after - before; grown > 4*failureBudgetMB<<20 {
		t.Errorf("160,000 failures grew the heap by %.1f MiB; budget %d MiB", mib(grown), failureBudgetMB)
	}
	kept := scrapeMetrics(t, srv)["surge_reservation_outcomes_retained_bytes"].GetMetric()
	if len(kept) != 1 || kept[0].GetGauge().GetValue() > failureBudgetMB<<20 {
		t.Errorf("surge_reservation_outcomes_retained_bytes: %v, budget %d MiB", kept, failureBudgetMB)
	}
	res, err := awaitReservation(c, last)
	if err != nil || res.State != "FAILED" || res.UserID == "" {
		t.Fatalf("the newest failure: %+v %v", res, err)
	}
}

// flood files n reservations that fail, half for the sold-out area and
// half for an unknown one, from 8 clients, and returns the last one's id.
func flood(t *testing.T, c *Client, n int) string {
	t.Helper()
	var next atomic.Int64
	var last atomic.Value
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				area := "A"
				if i%2 == 0 {
					area = fmt.Sprintf("no-such-area-%d", i)
				}
				id, r, err := reserve(c, ReserveReq{UserID: fmt.Sprintf("bot-%d", i), EventID: "flood", AreaID: area, NumOfSeats: 1, Type: "RANDOM"})
				if err != nil || id == "" {
					errs <- fmt.Errorf("reservation %d: %v %v", i, r, err)
					return
				}
				last.Store(id)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return last.Load().(string)
}

// liveHeap forces a collection in the server (the heap profile's gc=1)
// and returns its heap in use.
func liveHeap(t *testing.T, s *server) float64 {
	t.Helper()
	if r, err := s.c.raw(http.MethodGet, "/debug/pprof/heap?gc=1&debug=1", "", nil); err != nil || r.Status != http.StatusOK {
		t.Fatalf("forcing a GC: %v %v", r, err)
	}
	m := scrapeMetrics(t, s)["go_memstats_heap_inuse_bytes"].GetMetric()
	if len(m) != 1 {
		b, _ := json.Marshal(m)
		t.Fatalf("go_memstats_heap_inuse_bytes: %s", b)
	}
	return m[0].GetGauge().GetValue()
}

func mib(b float64) float64 { return b / (1 << 20) }
