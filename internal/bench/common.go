package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/load"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/units"
)

// Common holds the settings every scenario shares.
type Common struct {
	// Target is the base URL of the surge under test, or several,
	// comma-separated (the nodes of a cluster): the VUs spread over them.
	Target string
	// APIKey, if set, is sent as a Bearer token.
	APIKey string
	// VUs is the number of closed-loop virtual users.
	VUs int
	// Duration bounds the measured phase (0: no limit; needs Iterations).
	Duration time.Duration
	// Iterations, if positive, ends the run after that many measured
	// iterations in total.
	Iterations int64
	// Warmup runs the load unmeasured first.
	Warmup time.Duration
	// Timeout bounds the wait for each reply.
	Timeout time.Duration
	// Client selects the HTTP client the VUs send with (empty: FastClient).
	Client httpc.ClientKind
	// Pipeline, above 1, is how many VUs share a connection, pipelining
	// their requests on it (see HTTPOptions.Pipeline); 0 or 1: a
	// connection per VU.
	Pipeline int
	// Seed makes the random choices reproducible; 0 picks one, which the
	// result reports.
	Seed uint64
	// NoStallMeter leaves the machine-stall meter off (see MachineStalls),
	// giving its wake-ups back to the load generator; the result then has
	// no MachineStalls.
	NoStallMeter bool
	// Log receives setup messages and progress lines; nil discards them.
	Log io.Writer
}

// DefaultCommon returns the settings of seed 000's k6 run: 100 VUs for a
// minute against a local surge.
func DefaultCommon() Common {
	return Common{
		Target:   "http://127.0.0.1:8080",
		VUs:      100,
		Duration: time.Minute,
		Timeout:  30 * time.Second,
		Client:   httpc.FastClient,
	}
}

// Validate reports settings no run can have.
func (c Common) Validate() error {
	switch {
	case c.VUs <= 0:
		return errors.New("bench: --vus must be at least 1")
	case c.Duration < 0 || c.Warmup < 0 || c.Iterations < 0 || c.Timeout < 0:
		return errors.New("bench: --duration, --warmup, --iterations and --timeout must not be negative")
	case c.Duration == 0 && c.Iterations == 0:
		return errors.New("bench: set --duration or --iterations")
	case c.Pipeline < 0:
		return errors.New("bench: --pipeline must not be negative")
	}
	return c.Client.Validate()
}

// WithDefaults fills the unset fields a run needs: a seed and a log.
func (c Common) WithDefaults() Common {
	for c.Seed == 0 {
		c.Seed = randomUint64()
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

// Params are the run's settings for its Result, with the scenario's own
// in extra.
func (c Common) Params(extra map[string]string) report.Params {
	if c.Pipeline > 1 {
		// The load's shape differs, so a result says so.
		if extra == nil {
			extra = map[string]string{}
		}
		extra["pipeline"] = strconv.Itoa(c.Pipeline)
	}
	return report.Params{
		Target:     c.Target,
		VUs:        c.VUs,
		Duration:   measure.ToSeconds(c.Duration),
		Iterations: c.Iterations,
		Warmup:     measure.ToSeconds(c.Warmup),
		Seed:       c.Seed,
		Extra:      extra,
	}
}

// Closed is the closed-loop load these settings describe; onTick gets
// each closed second.
func (c Common) Closed(onTick func(measure.Tick)) load.Closed {
	return load.Closed{VUs: c.VUs, Duration: c.Duration, Iterations: c.Iterations, Warmup: c.Warmup, Seed: c.Seed, NoStallMeter: c.NoStallMeter, OnTick: onTick}
}

// HTTPClient opens a client to the target with conns connections.
func (c Common) HTTPClient(conns int) (*httpc.HTTPClient, error) {
	return httpc.NewHTTPClient(httpc.HTTPOptions{Target: c.Target, APIKey: c.APIKey, Client: c.Client, Conns: conns, Timeout: c.Timeout, Pipeline: c.Pipeline})
}

// CheckReady fails fast, with a clear message, when a target is down or
// not ready, instead of a run made only of connection errors.
func CheckReady(ctx context.Context, c *httpc.HTTPClient) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, t := range c.Split() {
		status, _, err := t.Do(ctx, http.MethodGet, "/readyz", nil)
		if err != nil {
			return fmt.Errorf("bench: target %s unreachable: %w", t.Target(), err)
		}
		if status != http.StatusOK {
			return fmt.Errorf("bench: target %s not ready: GET /readyz answered %d", t.Target(), status)
		}
	}
	return nil
}

// NewRunID returns a short random id that makes this run's request ids
// unique even when the seed, and so every other choice, repeats an
// earlier run's: a repeated id would be an idempotent replay, not work.
func NewRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

func randomUint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// DescribeLimit says what ends the run: "1m0s", "5000 iterations after 10s of warm-up".
func (c Common) DescribeLimit() string {
	s := units.K6Duration(c.Duration)
	if c.Iterations > 0 {
		s = fmt.Sprintf("%d iterations", c.Iterations)
	}
	if c.Warmup > 0 {
		s += " after " + units.K6Duration(c.Warmup) + " of warm-up"
	}
	return s
}
