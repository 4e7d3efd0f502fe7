// Package tpcb is `surge bench tpcb`: pgbench's default transaction
// (TPC-B, sort of) against surge's ledger and, given a PostgreSQL URL,
// the very same transaction mix against PostgreSQL, with the same load
// model, VUs and turn length, the targets taking turns in one run.
//
// pgbench's transaction adds a random delta to one account, one teller
// and one branch, reads the account's balance back and inserts a history
// row. On surge it is an atomic batch of three transfers between @world
// and the account, the teller and the branch (the ledger writes the
// history itself), then a GET of the account. Both sides draw the same
// accounts, tellers, branches and deltas: each VU's random source is
// seeded the same for every turn.
package tpcb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/load"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/units"
)

// TargetRatio is the target of docs/BENCHMARKS.md: surge at least ten times PostgreSQL's
// TPC-B rate, measured in the same run.
const TargetRatio = 10

// Target names in a report.
const (
	Surge      = "surge"
	PostgreSQL = "postgresql"
)

// Config configures the tpcb scenario. Common's Duration is the length of
// each turn, Iterations the transactions of each turn.
type Config struct {
	bench.Common
	// Scale is pgbench's scale factor: branches; tellers are 10 × Scale.
	Scale int
	// Accounts is the number of accounts (pgbench: 100,000 × Scale).
	Accounts int
	// PG, if set, is a PostgreSQL connection URL: the same mix runs there
	// too, on pgbench's four tables, which setup (re)creates.
	PG string
	// Rounds is the number of turns each target gets.
	Rounds int
	// DeltaMax bounds each transaction's delta: uniform in
	// [-DeltaMax, DeltaMax] without 0 (a ledger moves no zero amounts).
	DeltaMax int64
	// NoSetup reuses the accounts and tables of an earlier run of the
	// same scale.
	NoSetup bool
	// Prefix starts the ids of surge's accounts.
	Prefix string
}

// DefaultConfig returns pgbench's defaults (scale 1, delta ±5,000) with 16
// VUs taking three 10-second turns each.
func DefaultConfig() Config {
	c := Config{Common: bench.DefaultCommon(), Scale: 1, Rounds: 3, DeltaMax: 5000, Prefix: "tpcb-"}
	c.VUs = 16
	c.Duration = 10 * time.Second
	return c
}

func (c Config) validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	switch {
	case c.Scale < 1:
		return errors.New("bench: --scale must be at least 1")
	case c.Accounts < 0:
		return errors.New("bench: --accounts must not be negative")
	case c.Rounds < 1:
		return errors.New("bench: --rounds must be at least 1")
	case c.DeltaMax < 1:
		return errors.New("bench: --delta-max must be at least 1")
	case c.Pipeline > 1:
		return errors.New("bench: tpcb sends one transaction at a time per VU: --pipeline does not apply")
	}
	return nil
}

// accounts is the number of accounts, pgbench's 100,000 a branch unless
// set.
func (c Config) accounts() int {
	if c.Accounts > 0 {
		return c.Accounts
	}
	return 100_000 * c.Scale
}

// txn is one TPC-B transaction's draw: 1-based ids as pgbench's.
type txn struct {
	aid, tid, bid int
	delta         int64
}

// draw picks a transaction as pgbench's default script does.
func (c Config) draw(r *rand.Rand) txn {
	d := 1 + r.Int64N(c.DeltaMax)
	if r.IntN(2) == 0 {
		d = -d
	}
	return txn{aid: 1 + r.IntN(c.accounts()), tid: 1 + r.IntN(10*c.Scale), bid: 1 + r.IntN(c.Scale), delta: d}
}

// target is one side of the comparison.
type target interface {
	name() string
	// prepare makes a VU's transaction loop, before the clock starts.
	prepare(ctx context.Context, vu *load.VU) (load.Iteration, error)
	// consistency checks TPC-B's invariant after the run.
	consistency(ctx context.Context) string
	close()
}

// Run runs the tpcb scenario: setup of each target, then Rounds turns of
// each, alternating, and the comparison.
func Run(ctx context.Context, cfg Config) (*report.Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Common = cfg.Common.WithDefaults()
	progress := report.NewProgress(cfg.Log, "")
	surge, targets, err := openTargets(ctx, cfg, progress)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	progress.Printf("tpcb: scale %d, %s accounts, %d VUs, %d turns of %s each",
		cfg.Scale, units.Thousands(int64(cfg.accounts())), cfg.VUs, cfg.Rounds, cfg.Common.DescribeLimit())
	var surgeRuns []*load.Run
	rep := &report.TPCBReport{Scale: cfg.Scale, Accounts: cfg.accounts(), Consistent: map[string]string{}}
	for round := 1; round <= cfg.Rounds && ctx.Err() == nil; round++ {
		for _, t := range targets {
			if ctx.Err() != nil {
				break
			}
			progress.Printf("turn %d of %s", round, t.name())
			run, err := cfg.Closed(progress.Tick).Run(ctx, t.prepare)
			progress.Done()
			if err != nil {
				return nil, err
			}
			rep.Turns = append(rep.Turns, turnOf(t.name(), run))
			if t.name() == Surge {
				surgeRuns = append(surgeRuns, run)
			}
		}
	}
	for _, t := range targets {
		rep.Consistent[t.name()] = t.consistency(context.WithoutCancel(ctx))
	}
	compare(rep)
	res := report.NewResult("tpcb", cfg.Params(params(cfg)), mergeRuns(surgeRuns), surge.client)
	res.TPCB = rep
	res.Verdict = verdict(rep)
	return res, nil
}

// openTargets sets up surge and, with cfg.PG, PostgreSQL: the targets in
// the order of their turns.
func openTargets(ctx context.Context, cfg Config, progress *report.Progress) (*surgeTarget, []target, error) {
	s, err := openSurge(ctx, cfg, progress)
	if err != nil {
		return nil, nil, err
	}
	if cfg.PG == "" {
		return s, []target{s}, nil
	}
	p, err := openPG(ctx, cfg, progress)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, []target{s, p}, nil
}

func params(c Config) map[string]string {
	pg := "no"
	if c.PG != "" {
		pg = "yes"
	}
	return map[string]string{
		"scale":     strconv.Itoa(c.Scale),
		"accounts":  strconv.Itoa(c.accounts()),
		"rounds":    strconv.Itoa(c.Rounds),
		"delta_max": strconv.FormatInt(c.DeltaMax, 10),
		"pg":        pg,
	}
}

func turnOf(name string, run *load.Run) report.TPCBTurn {
	s := run.Stats
	return report.TPCBTurn{
		Target:       name,
		Elapsed:      measure.ToSeconds(run.Elapsed),
		Transactions: s.Requests(),
		Failed:       s.Failed(),
		TPS:          measure.PerSecond(s.Requests()-s.Failed(), run.Elapsed.Seconds()),
		Latency:      report.LatencyOf(s),
	}
}

// compare spreads each target's rates and, turn pair by turn pair, their
// ratio: pairs ran back to back, so the machine's drift over the run
// touches both sides of each ratio alike.
func compare(rep *report.TPCBReport) {
	var surge, pg, ratio []float64
	for i, t := range rep.Turns {
		switch t.Target {
		case Surge:
			surge = append(surge, t.TPS)
		case PostgreSQL:
			pg = append(pg, t.TPS)
			if prev := rep.Turns[i-1]; prev.Target == Surge && t.TPS > 0 {
				ratio = append(ratio, prev.TPS/t.TPS)
			}
		}
	}
	rep.Surge = report.SpreadOf(surge)
	if len(pg) > 0 {
		s := report.SpreadOf(pg)
		rep.PostgreSQL = &s
	}
	if len(ratio) > 0 {
		s := report.SpreadOf(ratio)
		rep.Ratio = &s
	}
}

// mergeRuns folds surge's turns into one run, the Result's main figures:
// every transaction's latency, the turns' time added up.
func mergeRuns(runs []*load.Run) *load.Run {
	if len(runs) == 0 {
		return &load.Run{Stats: measure.NewRecorder(time.Now())}
	}
	m := *runs[0]
	m.Stats = measure.NewRecorder(m.Start)
	m.Series = nil
	m.Elapsed, m.CPU = 0, 0
	for _, r := range runs {
		m.Stats.Merge(r.Stats)
		m.Elapsed += r.Elapsed
		m.CPU += r.CPU
		m.Interrupted = m.Interrupted || r.Interrupted
	}
	return &m
}

func verdict(rep *report.TPCBReport) *report.Verdict {
	if rep.Ratio == nil {
		return nil
	}
	return &report.Verdict{
		Target: fmt.Sprintf("surge ≥ %d × PostgreSQL's TPC-B rate, same run", TargetRatio),
		Pass:   rep.Ratio.Median >= TargetRatio,
		Detail: fmt.Sprintf("surge %s tps, PostgreSQL %s tps: %.2f× (pairs %.2f–%.2f)",
			units.Rate(rep.Surge.Median), units.Rate(rep.PostgreSQL.Median), rep.Ratio.Median, rep.Ratio.Min, rep.Ratio.Max),
	}
}
