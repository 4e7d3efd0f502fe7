package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// SLOTerm is one bound of a service level objective: the latency at a
// quantile must not exceed Max.
type SLOTerm struct {
	Name     string  // as written, such as "p99"
	Quantile float64 // 0..1
	Max      time.Duration
}

// ParseSLO reads an objective such as "p99=1ms" or "p99=1ms,p99.9=5ms".
func ParseSLO(s string) ([]SLOTerm, error) {
	var terms []SLOTerm
	for part := range strings.SplitSeq(s, ",") {
		name, limit, ok := strings.Cut(strings.TrimSpace(part), "=")
		q, err := strconv.ParseFloat(strings.TrimPrefix(name, "p"), 64)
		if !ok || !strings.HasPrefix(name, "p") || err != nil || q <= 0 || q > 100 {
			return nil, fmt.Errorf("bench: --slo %q: want terms like p99=1ms, comma-separated", s)
		}
		d, err := time.ParseDuration(limit)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("bench: --slo %q: %q is not a positive duration", s, limit)
		}
		terms = append(terms, SLOTerm{Name: name, Quantile: q / 100, Max: d})
	}
	return terms, nil
}

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
func findMaxKV(ctx context.Context, client *HTTPClient, cfg KVConfig, progress *Progress) (*Result, error) {
	slo, _ := ParseSLO(cfg.SLO) // validated already
	progress.Printf("kv find-max: %s on %s, %s per probe, SLO %s, starting at %s/s",
		cfg.Op, cfg.describeConns(), k6Duration(cfg.Duration), cfg.SLO, ratef(cfg.Rate))
	var probes []KVProbe
	var best, last *Result
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
func judgeProbe(r *Result, slo []SLOTerm, stalls *stallHistograms) KVProbe {
	ok := r.Totals.Requests - r.Totals.Failed
	p := KVProbe{
		Rate: r.KV.Rate, Achieved: perSecond(ok, float64(r.Params.Duration)),
		P50Ms: r.Latency.Med, P99Ms: r.Latency.P99, P999Ms: r.Latency.P999, MaxMs: r.Latency.Max,
		Failed: r.Totals.Failed, Unsent: r.KV.Unsent, MachineCPU: r.MachineCPU,
	}
	var why []string
	var missed []SLOTerm
	for _, t := range slo {
		if got := r.KV.SLOMs[t.Name]; got > durationMs(t.Max) {
			why = append(why, fmt.Sprintf("%s %s > %s", t.Name, k6Duration(msDuration(got)), k6Duration(t.Max)))
			missed = append(missed, t)
		}
	}
	p.Stalls, p.Machine = r.MachineStalls, stalls.note(r, "probe", missed)
	if p.Achieved < minKeptUp*p.Rate {
		why = append(why, fmt.Sprintf("served %s/s of %s/s", ratef(p.Achieved), ratef(p.Rate)))
	}
	if r.FailureRate() > MaxFailureRate {
		why = append(why, fmt.Sprintf("%s failed", percent(r.FailureRate())))
	}
	p.Pass, p.Why = len(why) == 0, strings.Join(why, ", ")
	return p
}

// String is the probe's line in the search's log.
func (p KVProbe) String() string {
	verdict := "PASS"
	if !p.Pass {
		verdict = "FAIL (" + p.whyAll() + ")"
	}
	machine := ""
	if p.Stalls != nil {
		machine = ", stalled " + percent(p.Stalls.StalledShare)
	}
	if m := p.MachineCPU; m != nil {
		machine += ", steal " + percent0(m.Steal)
	}
	return fmt.Sprintf("rate %s/s → %s/s, p50 %s, p99 %s, p99.9 %s, max %s, %d failed, %d unsent%s: %s",
		ratef(p.Rate), ratef(p.Achieved), k6Duration(msDuration(p.P50Ms)), k6Duration(msDuration(p.P99Ms)),
		k6Duration(msDuration(p.P999Ms)), k6Duration(msDuration(p.MaxMs)), p.Failed, p.Unsent, machine, verdict)
}

// whyAll is what a failed probe missed and, if they explain it, the
// machine's stalls.
func (p KVProbe) whyAll() string {
	if p.Machine == "" {
		return p.Why
	}
	return p.Why + "; " + p.Machine
}
