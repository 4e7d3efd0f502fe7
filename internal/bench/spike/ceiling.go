package spike

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/load"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
)

// ceilingBody is a reservation body of the spike's size.
var ceilingBody = []byte(`{"eventId":"spike-00000000-0","areaId":"0","type":"RANDOM","seats":[],"userId":"u-0-0","numOfSeats":2}`)

// newCeilingServer is an empty handler served over h2c (net/http's
// own): it reads each request's body and answers 200 with nothing.
func newCeilingServer() *http.Server {
	srv := &http.Server{
		Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
		}),
		Protocols:         new(http.Protocols),
		ReadHeaderTimeout: 10 * time.Second,
	}
	srv.Protocols.SetUnencryptedHTTP2(true)
	return srv
}

// ServeCeiling serves the ceiling's empty h2c handler on a loopback port,
// writes its URL as a line to w, and serves until ctx ends: the target of
// `surge bench spike --ceiling`, in a process of its own.
func ServeCeiling(ctx context.Context, w io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := newCeilingServer()
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	if _, err := fmt.Fprintf(w, "http://%s\n", ln.Addr()); err != nil {
		_ = srv.Close()
		return err
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// startCeiling starts the ceiling's target with CeilingTarget, or else in
// this process (its CPU time then unknown).
func (c SpikeConfig) startCeiling(ctx context.Context) (url string, stop func() time.Duration, err error) {
	if c.CeilingTarget != nil {
		return c.CeilingTarget(ctx)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := newCeilingServer()
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() time.Duration { _ = srv.Close(); return -1 }, nil
}

// runCeiling runs the spike's client shape against the empty handler: the
// same VUs, iterations (or duration) and connections, each iteration a
// POST and then a GET, as a reservation and its long poll.
func runCeiling(ctx context.Context, cfg SpikeConfig, spikeRate float64) (*report.SpikeCeiling, error) {
	url, stopTarget, err := cfg.startCeiling(ctx)
	if err != nil {
		return nil, err
	}
	var stopOnce sync.Once
	cpu := time.Duration(-1)
	stop := func() { stopOnce.Do(func() { cpu = stopTarget() }) }
	defer stop()
	client, err := httpc.NewHTTPClient(httpc.HTTPOptions{Target: url, Client: cfg.Client, Conns: cfg.Conns, Timeout: cfg.Timeout})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	closed := cfg.Closed(nil)
	closed.NoStallMeter = true
	run, err := closed.Run(ctx, func(vctx context.Context, _ *load.VU) (load.Iteration, error) {
		ep := client.Endpoint(vctx, http.MethodPost, "/v1/event/e/reservation")
		get := []byte("/v1/reservation/r")
		return func(ctx context.Context, vu *load.VU) {
			start := time.Now()
			status, _, err := ep.Send(append(ep.Body(), ceilingBody...))
			if err == nil && status == http.StatusOK {
				status, _, err = ep.SendURI(http.MethodGet, get, nil)
			}
			if err != nil && ctx.Err() != nil {
				return
			}
			o := measure.Outcome{}
			if err != nil {
				o.Failure = httpc.ErrorKey(err)
			} else if status != http.StatusOK {
				o.Failure = httpc.StatusKey(status, nil)
			}
			vu.Record(start, o)
		}, nil
	})
	if err != nil {
		return nil, err
	}
	stop()
	s := run.Stats
	c := &report.SpikeCeiling{
		CPU:          cpu.Seconds(),
		Elapsed:      measure.ToSeconds(run.Elapsed),
		Iterations:   s.Requests(),
		Failed:       s.Failed(),
		IterationsPS: measure.PerSecond(s.Requests(), run.Elapsed.Seconds()),
		Latency:      report.LatencyOf(s),
	}
	if c.IterationsPS > 0 {
		c.Share = spikeRate / c.IterationsPS
	}
	return c, nil
}
