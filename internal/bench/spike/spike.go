package spike

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/units"
)

// Limits of the spike scenario's configuration. The seat ledger the run
// keeps to catch double bookings takes a bit and a string header per seat.
const (
	spikeMaxSeatsTotal    = 4_000_000
	spikeMaxEventsOrAreas = 1000
	spikeMaxRowsOrCols    = 1000
	spikeMaxSeatsAsked    = 50
	spikeMaxWait          = time.Minute
)

// SpikeConfig configures the spike scenario, ticket-master's load test
// (seeds 002 and 003): a burst of requests, each for 1 to MaxSeats adjacent
// seats of a random area, against a fixed stock of seats.
type SpikeConfig struct {
	// Common.VUs is the number of concurrent workers (-c) and
	// Common.Iterations the number of reservation requests (-n).
	bench.Common
	// Events, Areas (per event), Rows and Cols shape the stock of seats.
	Events, Areas, Rows, Cols int
	// MaxSeats bounds each request's numOfSeats, drawn from 1..MaxSeats.
	MaxSeats int
	// EventPrefix names the events (prefix-0, prefix-1, …); empty means
	// "spike-<run id>", new events every run.
	EventPrefix string
	// Wait, if positive, asks for the final reservation in the POST's
	// reply (?wait=) instead of a long-poll GET after it.
	Wait time.Duration
	// Hold is the events' hold time, longer than the run so that no hold
	// expires before the seat maps are checked.
	Hold time.Duration
	// Retries bounds the retries of one request answered 503.
	Retries int
	// HTTP2 sends over Conns HTTP/2 connections (h2c with prior
	// knowledge), the streams of all the VUs shared among them, as
	// ticket-master's client does, instead of a connection per VU.
	HTTP2 bool
	Conns int
	// Ceiling, with HTTP2, then runs the same client shape (POST, then
	// GET, by the same VUs over as many connections) against an empty Go
	// h2c handler (started by CeilingTarget): what this client and
	// machine can do at best.
	Ceiling bool
	// CeilingTarget, if set, starts the ceiling's target (see
	// ServeCeiling) and returns its URL, and stop, which ends it and
	// returns the CPU time it used (negative: unknown); nil serves it in
	// this process, whose CPU time is the load generator's too.
	CeilingTarget func(ctx context.Context) (url string, stop func() time.Duration, err error)
}

// DefaultSpikeConfig returns seed 003's run: 1,000,000 requests for 4
// events of 100 areas of 20×20 seats (160,000 seats), by 1,000 workers.
func DefaultSpikeConfig() SpikeConfig {
	c := bench.DefaultCommon()
	c.VUs, c.Duration, c.Iterations = 1000, 0, 1_000_000
	return SpikeConfig{Common: c, Events: 4, Areas: 100, Rows: 20, Cols: 20, MaxSeats: 4, Hold: time.Hour, Retries: 20}
}

func (c SpikeConfig) validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	switch {
	case c.Warmup != 0:
		return errors.New("bench: spike has no warm-up: it would sell the seats before the measured run")
	case c.Events < 1 || c.Events > spikeMaxEventsOrAreas || c.Areas < 1 || c.Areas > spikeMaxEventsOrAreas:
		return fmt.Errorf("bench: --events and --areas must each be 1 to %d", spikeMaxEventsOrAreas)
	case c.Rows < 1 || c.Rows > spikeMaxRowsOrCols || c.Cols < 1 || c.Cols > spikeMaxRowsOrCols:
		return fmt.Errorf("bench: --rows and --cols must be 1 to %d", spikeMaxRowsOrCols)
	case c.Events*c.Areas > spikeMaxSeatsTotal/(c.Rows*c.Cols):
		return fmt.Errorf("bench: at most %s seats in all (--events × --areas × --rows × --cols)", units.Thousands(spikeMaxSeatsTotal))
	case c.MaxSeats < 1 || c.MaxSeats > min(c.Cols, spikeMaxSeatsAsked):
		return fmt.Errorf("bench: --max-seats must be 1 to %d (and at most --cols)", spikeMaxSeatsAsked)
	case c.Wait < 0 || c.Wait > spikeMaxWait:
		return fmt.Errorf("bench: --wait must be 0 to %s", spikeMaxWait)
	case c.Hold < time.Second:
		return errors.New("bench: --hold must be at least 1s")
	case c.Retries < 0:
		return errors.New("bench: --retries must not be negative")
	case c.HTTP2 && (c.Conns < 1 || c.Pipeline > 1 || (c.Client != "" && c.Client != httpc.FastClient && c.Client != httpc.H2FastClient && c.Client != httpc.H2CClient)):
		return errors.New("bench: --http2 needs --conns of at least 1, no --pipeline, and --http-client h2fast (the default) or h2c")
	case c.Ceiling && !c.HTTP2:
		return errors.New("bench: --ceiling measures the HTTP/2 client: it needs --http2")
	}
	return nil
}

// connections is how many connections the run uses, and the client:
// over HTTP/2 the lab's own (h2fast, h2c only), or net/http's when
// --http-client h2c asks for it or a target is https://.
func (c SpikeConfig) connections() (int, httpc.ClientKind) {
	if c.HTTP2 {
		if c.Client == httpc.H2CClient || slices.ContainsFunc(httpc.SplitTargets(c.Target), func(t string) bool {
			return strings.HasPrefix(t, "https://")
		}) {
			return c.Conns, httpc.H2CClient
		}
		return c.Conns, httpc.H2FastClient
	}
	return c.VUs, c.Client
}

// spikeArea is one area of the run, with what its requests need ready-made.
type spikeArea struct {
	event, id string
	// post is the request-URI of its reservation POST; bodyHead its body
	// up to the userId's value.
	post     []byte
	bodyHead string
}

// spikePlan names the run's events and areas; area i of event e is
// areas[e*Areas+i].
type spikePlan struct {
	prefix string
	events []string
	areas  []spikeArea
}

func newSpikePlan(c SpikeConfig, prefix string) *spikePlan {
	p := &spikePlan{prefix: prefix}
	query := ""
	if c.Wait > 0 {
		query = "?wait=" + c.Wait.String()
	}
	for e := range c.Events {
		name := prefix + "-" + strconv.Itoa(e)
		p.events = append(p.events, name)
		for a := range c.Areas {
			id := strconv.Itoa(a)
			p.areas = append(p.areas, spikeArea{
				event:    name,
				id:       id,
				post:     []byte("/v1/event/" + name + "/reservation" + query),
				bodyHead: `{"eventId":"` + name + `","areaId":"` + id + `","type":"RANDOM","seats":[],"userId":"`,
			})
		}
	}
	return p
}

// RunSpike runs the spike scenario against cfg.Target: it creates the
// events, fires the requests, then checks every sale against the server's
// seat maps. Setup problems and an unreachable target are errors; failed
// requests and double bookings are in the Result (see Result.Err).
func RunSpike(ctx context.Context, cfg SpikeConfig) (*report.Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Common = cfg.Common.WithDefaults()
	conns, kind := cfg.connections()
	cfg.Client = kind
	client, err := cfg.HTTPClient(conns)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	progress := report.NewProgress(cfg.Log, "")
	if err := bench.CheckReady(ctx, client); err != nil {
		return nil, err
	}
	runID := bench.NewRunID()
	prefix := cfg.EventPrefix
	if prefix == "" {
		prefix = "spike-" + runID
	}
	plan := newSpikePlan(cfg, prefix)
	t0 := time.Now()
	if err := createSpikeEvents(ctx, client, cfg, plan); err != nil {
		return nil, err
	}
	progress.Printf("setup: %d events × %d areas × %d×%d seats (%s seats) created in %s",
		cfg.Events, cfg.Areas, cfg.Rows, cfg.Cols, units.Thousands(int64(len(plan.areas)*cfg.Rows*cfg.Cols)), units.K6Duration(time.Since(t0)))

	s := newSpikeRun(cfg, client, plan, runID)
	progress.Printf("spike: %s requests by %d workers, %s, run id %s", units.Thousands(cfg.Iterations), cfg.VUs, s.mode(), runID)
	server := sampleServer(ctx, client)
	run, err := cfg.Closed(progress.Tick).Run(ctx, s.prepare)
	s.closeEndpoints()
	progress.Done()
	sample := server()
	h2 := client.H2Events() // the run's, before the checks' requests
	if err != nil {
		return nil, err
	}
	// The checks run even after an interrupt: what was sold must be right.
	sales := measure.NewSalesTally(run.Start)
	rep := s.report(run.Start, sample, sales)
	progress.Printf("checking the seat maps of %d areas", len(plan.areas))
	checkCtx := context.WithoutCancel(ctx)
	rep.SeatMaps = s.book.checkServer(checkCtx, client, plan)
	addServerEvents(checkCtx, rep, client, plan, run.Start)

	res := report.NewResult("spike", cfg.Params(spikeParams(cfg, plan, runID)), run, client)
	res.Spike = rep
	if cfg.HTTP2 {
		if rep.HTTP2, err = http2Report(ctx, cfg, h2, res.Totals.RequestsPerS, progress); err != nil {
			return nil, err
		}
	}
	res.Sales = sales.Curve()
	res.Verdict = spikeVerdict(res, run.StallHists)
	return res, nil
}

func spikeParams(c SpikeConfig, p *spikePlan, runID string) map[string]string {
	m := map[string]string{
		"events":       strconv.Itoa(c.Events),
		"areas":        strconv.Itoa(c.Areas),
		"rows":         strconv.Itoa(c.Rows),
		"cols":         strconv.Itoa(c.Cols),
		"max_seats":    strconv.Itoa(c.MaxSeats),
		"event_prefix": p.prefix,
		"wait":         c.Wait.String(),
		"hold":         c.Hold.String(),
		"run_id":       runID,
		"http_client":  string(c.Client.OrDefault()),
	}
	if c.HTTP2 {
		m["conns"] = strconv.Itoa(c.Conns)
	}
	return m
}

// http2Report is an --http2 run's connections and what the server did to
// them, events, and with --ceiling the same client's run against an empty
// handler.
func http2Report(ctx context.Context, cfg SpikeConfig, events *httpc.H2Events, rate float64, progress *report.Progress) (*report.SpikeHTTP2, error) {
	h := &report.SpikeHTTP2{Conns: cfg.Conns, H2Events: *events}
	if !cfg.Ceiling || ctx.Err() != nil {
		return h, nil
	}
	progress.Printf("ceiling: the same client against an empty h2c handler")
	c, err := runCeiling(ctx, cfg, rate)
	if err != nil {
		return nil, err
	}
	h.Ceiling = c
	return h, nil
}

// createSpikeEvents creates the events, one request each. An event that
// exists with the same definition is answered 200 too (a replay), so a
// fixed --event-prefix can be reused.
func createSpikeEvents(ctx context.Context, c *httpc.HTTPClient, cfg SpikeConfig, p *spikePlan) error {
	type area struct {
		AreaID   string `json:"areaId"`
		Price    int64  `json:"price"`
		RowCount int    `json:"rowCount"`
		ColCount int    `json:"colCount"`
	}
	areas := make([]area, cfg.Areas)
	for i := range areas {
		areas[i] = area{AreaID: strconv.Itoa(i), RowCount: cfg.Rows, ColCount: cfg.Cols}
	}
	for _, name := range p.events {
		body, err := json.Marshal(map[string]any{
			"eventName":   name,
			"artist":      "surge bench spike",
			"areas":       areas,
			"holdSeconds": int64(cfg.Hold / time.Second),
		})
		if err != nil {
			return err
		}
		status, reply, err := c.Do(ctx, http.MethodPost, "/v1/event", body)
		if err != nil {
			return fmt.Errorf("bench: creating event %s: %w", name, err)
		}
		if status != http.StatusOK {
			return fmt.Errorf("bench: creating event %s: %s: %s", name, httpc.StatusKey(status, reply), httpc.ProblemDetail(reply))
		}
	}
	return nil
}
