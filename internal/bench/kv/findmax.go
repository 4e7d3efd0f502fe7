package kv

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/units"
)

// Rules of the search that are not worth a flag.
const (
	// minKeptUp is the share of the due requests a probe must complete
	// to pass: a server that falls behind shows it here even before its
	// latencies do.
	minKeptUp = 0.99
	// searchPrecision ends the binary search once the highest passing and
	// the lowest failing rate are this close.
	searchPrecision = 0.02
	// probePause lets the server drain between probes (queued requests,
	// compactions), so each probe starts from rest.
	probePause = 2 * time.Second
)

// findMaxKV searches for the highest rate that meets the SLO, as report
// 004 did by hand with wrk2: doubling from cfg.Rate while probes pass (or
// halving while they fail), then bisecting between the best passing and
// the worst failing rate. It prints every probe and returns the best
// passing probe's result (or the last one, if none passed) with all the
// probes attached.
func findMaxKV(ctx context.Context, client *httpc.HTTPClient, cfg KVConfig, progress *report.Progress) (*report.Result, error) {
	slo, _ := report.ParseSLO(cfg.SLO) // validated already
	progress.Printf("kv find-max: %s on %s, %s per probe, SLO %s, starting at %s/s",
		cfg.Op, cfg.describeConns(), units.K6Duration(cfg.Duration), cfg.SLO, units.Rate(cfg.Rate))
	var probes []report.KVProbe
	var best, last *report.Result
	pass, fail := 0.0, math.Inf(1)
	probe := func(rate float64) (bool, error) {
		if len(probes) > 0 {
			time.Sleep(probePause)
		}
		res, stalls, err := runKV(ctx, client, cfg, rate, nil, slo)
		if err != nil {
			return false, err
		}
		p := judgeProbe(res, slo, stalls)
		probes = append(probes, p)
		progress.Printf("probe %2d: %s", len(probes), p)
		last = res
		if p.Pass {
			best, pass = res, max(pass, rate)
		} else {
			fail = min(fail, rate)
		}
		return p.Pass, nil
	}
	next := searchStep(cfg.Rate)
	for rate, ok := cfg.Rate, true; ok && len(probes) < cfg.MaxProbes && ctx.Err() == nil; rate, ok = next(pass, fail) {
		if _, err := probe(rate); err != nil {
			return nil, err
		}
	}
	res := best
	if res == nil {
		res = last
	}
	res.KV.SLO, res.KV.Probes = cfg.SLO, probes
	return res, nil
}

// searchStep returns the search's rule for the next rate, given the
// highest passing rate so far (0: none) and the lowest failing one (+Inf:
// none); ok is false when the search is done.
func searchStep(start float64) func(pass, fail float64) (rate float64, ok bool) {
	return func(pass, fail float64) (float64, bool) {
		switch {
		case math.IsInf(fail, 1):
			return pass * 2, true
		case pass == 0:
			r := math.Floor(fail / 2)
			return r, r >= 1
		case fail/pass <= 1+searchPrecision:
			return 0, false
		}
		return math.Round((pass + fail) / 2), true
	}
}

// judgeProbe checks one probe's result against the SLO; stalls explain
// the bounds it missed.
func judgeProbe(r *report.Result, slo []report.SLOTerm, stalls *measure.StallHistograms) report.KVProbe {
	ok := r.Totals.Requests - r.Totals.Failed
	p := report.KVProbe{
		Rate: r.KV.Rate, Achieved: measure.PerSecond(ok, float64(r.Params.Duration)),
		P50Ms: r.Latency.Med, P99Ms: r.Latency.P99, P999Ms: r.Latency.P999, MaxMs: r.Latency.Max,
		Failed: r.Totals.Failed, Unsent: r.KV.Unsent, MachineCPU: r.MachineCPU,
	}
	var why []string
	var missed []report.SLOTerm
	for _, t := range slo {
		if got := r.KV.SLOMs[t.Name]; got > measure.DurationMs(t.Max) {
			why = append(why, fmt.Sprintf("%s %s > %s", t.Name, units.K6Duration(units.MsDuration(got)), units.K6Duration(t.Max)))
			missed = append(missed, t)
		}
	}
	p.Stalls, p.Machine = r.MachineStalls, report.StallNote(stalls, r, "probe", missed)
	if p.Achieved < minKeptUp*p.Rate {
		why = append(why, fmt.Sprintf("served %s/s of %s/s", units.Rate(p.Achieved), units.Rate(p.Rate)))
	}
	if r.FailureRate() > report.MaxFailureRate {
		why = append(why, fmt.Sprintf("%s failed", units.Percent(r.FailureRate())))
	}
	p.Pass, p.Why = len(why) == 0, strings.Join(why, ", ")
	return p
}
