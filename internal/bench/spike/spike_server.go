package spike

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/report"
)

// rssMetric is the Prometheus process collector's resident set size.
const rssMetric = "process_resident_memory_bytes"

// eventJSON is the part of GET /v1/event/{id} the report uses.
type eventJSON struct {
	Areas []struct {
		Sold int64 `json:"sold"`
	} `json:"areas"`
	SoldOutAt *time.Time `json:"soldOutAt"`
}

// addServerEvents reads the events back for the server's own figures: the
// seats sold, and when the last event sold out (relative to start), if
// every event did. A figure any event does not give stays unknown.
func addServerEvents(ctx context.Context, s *report.SpikeReport, c *httpc.HTTPClient, plan *spikePlan, start time.Time) {
	var sold int64
	var soldOut time.Time
	allSoldOut := true
	for _, name := range plan.events {
		status, reply, err := c.Do(ctx, http.MethodGet, "/v1/event/"+name, nil)
		var ev eventJSON
		if err != nil || status != http.StatusOK || json.Unmarshal(reply, &ev) != nil {
			return
		}
		for _, a := range ev.Areas {
			sold += a.Sold
		}
		if ev.SoldOutAt == nil {
			allSoldOut = false
		} else if ev.SoldOutAt.After(soldOut) {
			soldOut = *ev.SoldOutAt
		}
	}
	s.ServerSeatsSold = sold
	if allSoldOut {
		s.ServerSoldOut = secondsPtr(soldOut.Sub(start))
	}
}

// sampleRSS polls the server's resident set size each second until the
// returned function is called, which returns the largest value seen (-1
// if the server does not report it).
func sampleRSS(ctx context.Context, c *httpc.HTTPClient) (peak func() int64) {
	var (
		wg      sync.WaitGroup
		largest int64 = -1
	)
	poll := func(ctx context.Context) {
		status, reply, err := c.Do(ctx, http.MethodGet, "/metrics", nil)
		if v, ok := metricValue(reply, rssMetric); err == nil && status == http.StatusOK && ok {
			largest = max(largest, v)
		}
	}
	loopCtx, cancel := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			poll(loopCtx)
			select {
			case <-tick.C:
			case <-loopCtx.Done():
				return
			}
		}
	}()
	return func() int64 {
		cancel()
		wg.Wait()
		poll(context.WithoutCancel(ctx)) // the end of the run may be the peak
		return largest
	}
}

// metricValue finds an unlabelled sample of name in a Prometheus text
// exposition.
func metricValue(text []byte, name string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(name+" "))
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(string(bytes.TrimSpace(rest)), 64)
		if err != nil {
			return 0, false
		}
		return int64(v), true
	}
	return 0, false
}
