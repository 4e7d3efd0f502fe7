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

// The Prometheus process collector's resident set size and CPU time.
const (
	rssMetric = "process_resident_memory_bytes"
	cpuMetric = "process_cpu_seconds_total"
)

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

// serverSample is what the server's /metrics said over a run: its peak
// resident set size (-1 if unknown), and the CPU time it used (-1 if
// unknown), which the server's own poll of /metrics each second adds to.
type serverSample struct {
	peakRSS int64
	cpu     float64
}

// sampleServer reads the server's CPU time, then polls its resident set
// size each second until the returned function is called, which reads
// both again and returns what it saw.
func sampleServer(ctx context.Context, c *httpc.HTTPClient) (end func() serverSample) {
	var (
		wg      sync.WaitGroup
		largest int64 = -1
	)
	poll := func(ctx context.Context) (cpu float64, ok bool) {
		status, reply, err := c.Do(ctx, http.MethodGet, "/metrics", nil)
		if err != nil || status != http.StatusOK {
			return 0, false
		}
		if v, ok := metricValue(reply, rssMetric); ok {
			largest = max(largest, int64(v))
		}
		return metricValue(reply, cpuMetric)
	}
	cpu0, ok0 := poll(ctx)
	loopCtx, cancel := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				poll(loopCtx)
			case <-loopCtx.Done():
				return
			}
		}
	}()
	return func() serverSample {
		cancel()
		wg.Wait()
		// The end of the run may be the peak.
		cpu1, ok1 := poll(context.WithoutCancel(ctx))
		s := serverSample{peakRSS: largest, cpu: -1}
		if ok0 && ok1 {
			s.cpu = cpu1 - cpu0
		}
		return s
	}
}

// metricValue finds an unlabelled sample of name in a Prometheus text
// exposition.
func metricValue(text []byte, name string) (float64, bool) {
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
		return v, true
	}
	return 0, false
}
