package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/load"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/units"
)

// MaxBatch is the most transfers the ledger accepts in one batch.
const MaxBatch = 8190

// Targets for the transfer scenario (docs/BENCHMARKS.md, "Targets").
const (
	TargetTPS         = 30000
	TargetP95Ms       = 10
	TargetBatchPerSec = 500000
)

// TransferConfig configures the transfer scenario, seed 000's k6 test:
// closed-loop VUs moving random amounts between random accounts.
type TransferConfig struct {
	bench.Common
	// Accounts is the number of accounts transfers run between.
	Accounts int
	// Batch, if positive, sends that many transfers per request to the
	// batch route; 0 uses the single-transfer route.
	Batch int
	// AmountMax bounds each transfer's amount, drawn from 1..AmountMax.
	AmountMax int64
	// Fund is each account's initial balance from @world.
	Fund int64
	// NoSetup reuses the accounts of an earlier run.
	NoSetup bool
	// Currency of the accounts.
	Currency string
	// AccountPrefix starts every account id; ids are prefix + index.
	AccountPrefix string
	// RetryJitter, if positive, adds a random wait of up to this long to
	// the Retry-After of a refusal, as a client with jittered backoff
	// does; 0 waits exactly Retry-After, as go-retryablehttp does.
	RetryJitter time.Duration
}

// DefaultTransferConfig returns seed 000's settings with 50,000 accounts,
// funded far beyond what a run can move out of any one of them.
func DefaultTransferConfig() TransferConfig {
	return TransferConfig{
		Common:        bench.DefaultCommon(),
		Accounts:      50000,
		AmountMax:     1000,
		Fund:          1_000_000_000,
		Currency:      "USD",
		AccountPrefix: "bench-",
	}
}

func (c TransferConfig) validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	switch {
	case c.Accounts < 2:
		return errors.New("bench: --accounts must be at least 2")
	case c.Batch < 0 || c.Batch > MaxBatch:
		return fmt.Errorf("bench: --batch must be between 0 and %d", MaxBatch)
	case c.AmountMax < 1:
		return errors.New("bench: --amount-max must be at least 1")
	case c.Fund < c.AmountMax:
		return errors.New("bench: --fund must be at least --amount-max")
	}
	return nil
}

func (c TransferConfig) accountID(i int) string { return c.AccountPrefix + strconv.Itoa(i) }

// RunTransfer runs the transfer scenario against cfg.Target: it creates and
// funds the accounts (unless NoSetup), checks them, runs the load and
// returns what it measured. Setup problems and an unreachable target are
// errors; failed transfers are counted in the Result (see Result.Err).
func RunTransfer(ctx context.Context, cfg TransferConfig) (*report.Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Common = cfg.Common.WithDefaults()
	client, err := cfg.HTTPClient(max(cfg.VUs, setupWorkers))
	if err != nil {
		return nil, err
	}
	defer client.Close()
	opsName := ""
	if cfg.Batch > 0 {
		opsName = "transfers"
	}
	progress := report.NewProgress(cfg.Log, opsName)
	if err := bench.CheckReady(ctx, client); err != nil {
		return nil, err
	}
	if err := setupTransferAccounts(ctx, client, cfg, progress); err != nil {
		return nil, err
	}

	runID := bench.NewRunID()
	progress.Printf("transfer: %d VUs, %s, run id %s", cfg.VUs, cfg.Common.DescribeLimit(), runID)
	run, err := cfg.Closed(progress.Tick).Run(ctx, func(vctx context.Context, vu *load.VU) (load.Iteration, error) {
		return newTransferVU(vctx, client, cfg, runID, vu.ID).iterate, nil
	})
	progress.Done()
	if err != nil {
		return nil, err
	}
	res := report.NewResult("transfer", cfg.Params(transferParams(cfg, runID)), run, client)
	res.Totals.OpsName = opsName
	res.Verdict = transferVerdict(res, cfg.Batch, run.StallHists)
	return res, nil
}

func transferParams(c TransferConfig, runID string) map[string]string {
	return map[string]string{
		"accounts":     strconv.Itoa(c.Accounts),
		"batch":        strconv.Itoa(c.Batch),
		"amount_max":   strconv.FormatInt(c.AmountMax, 10),
		"fund":         strconv.FormatInt(c.Fund, 10),
		"no_setup":     strconv.FormatBool(c.NoSetup),
		"currency":     c.Currency,
		"run_id":       runID,
		"http_client":  string(c.Client.OrDefault()),
		"retry_jitter": c.RetryJitter.String(),
	}
}

// transferVerdict judges a run against its targets, counting only transfers
// the server accepted; stalls explain a missed p95.
func transferVerdict(r *report.Result, batch int, stalls *measure.StallHistograms) *report.Verdict {
	secs := float64(r.Totals.Elapsed)
	if batch == 0 {
		tps := measure.PerSecond(r.Totals.Requests-r.Totals.Failed, secs)
		p95 := report.SLOTerm{Name: "p95", Quantile: 0.95, Max: TargetP95Ms * time.Millisecond}
		return &report.Verdict{
			Target: fmt.Sprintf("≥ %s TPS with p95 ≤ %d ms", units.Thousands(TargetTPS), TargetP95Ms),
			Pass:   tps >= TargetTPS && r.Latency.P95 <= TargetP95Ms,
			Detail: fmt.Sprintf("%s TPS, p95 %s", units.Rate(tps), units.K6Duration(units.MsDuration(r.Latency.P95))) + report.StallVerdictNote(stalls, r, p95, r.Latency.P95),
		}
	}
	rate := measure.PerSecond(r.Totals.Ops-r.Totals.FailedOps, secs)
	return &report.Verdict{
		Target: fmt.Sprintf("≥ %s transfers/s", units.Thousands(TargetBatchPerSec)),
		Pass:   rate >= TargetBatchPerSec,
		Detail: fmt.Sprintf("%s transfers/s in batches of %d, p95 %s per batch", units.Rate(rate), batch, units.K6Duration(units.MsDuration(r.Latency.P95))),
	}
}

// transferVU is one VU of the transfer scenario. It builds each request
// body by appending to a reused buffer, with no JSON encoder, because on a
// machine shared with the server every microsecond the load generator
// spends is one the server does not get.
type transferVU struct {
	ep        *httpc.Endpoint
	accounts  int
	prefix    string // account id prefix
	amountMax int64
	batch     int
	jitter    time.Duration // RetryJitter
	idPrefix  string        // "<run id>-<vu>-"
	seq       bench.Decimal // transfers this VU has sent; makes ids unique
}

func newTransferVU(ctx context.Context, c *httpc.HTTPClient, cfg TransferConfig, runID string, vu int) *transferVU {
	path := "/v1/transfers"
	if cfg.Batch > 0 {
		path = "/v1/transfers/batch"
	}
	return &transferVU{
		ep:        c.Endpoint(ctx, http.MethodPost, path),
		accounts:  cfg.Accounts,
		prefix:    cfg.AccountPrefix,
		amountMax: cfg.AmountMax,
		batch:     cfg.Batch,
		jitter:    cfg.RetryJitter,
		idPrefix:  runID + "-" + strconv.Itoa(vu) + "-",
		seq:       bench.Decimal("0"),
	}
}

func (t *transferVU) iterate(ctx context.Context, vu *load.VU) {
	body := t.ep.Body()
	if t.batch > 0 {
		body = append(body, `{"transfers":[`...)
		for i := range t.batch {
			if i > 0 {
				body = append(body, ',')
			}
			body = t.appendTransfer(body, vu.Rand)
		}
		body = append(body, "]}"...)
	} else {
		body = t.appendTransfer(body, vu.Rand)
	}
	start := time.Now()
	status, reply, err := t.ep.Send(body)
	if err != nil && ctx.Err() != nil {
		return // interrupted: not the server's failure
	}
	o := t.judge(vu, status, reply, err)
	vu.Record(start, o)
	if o.Refused {
		// As a client should: the next request waits as long as the
		// refusal asked, and with a jitter those refused together come
		// back spread rather than as one herd; not past the run's end.
		vu.Wait(t.ep.RetryAfter() + t.retryJitter(vu.Rand))
	}
}

// retryJitter is a random extra wait after a refusal, up to the jitter.
func (t *transferVU) retryJitter(r *rand.Rand) time.Duration {
	if t.jitter <= 0 {
		return 0
	}
	return time.Duration(r.Int64N(int64(t.jitter)))
}

// appendTransfer appends one transfer between two distinct random accounts.
// Account ids are formatted each time: a table of preformatted ids is
// slower, its random reads miss the cache when there are many accounts.
func (t *transferVU) appendTransfer(b []byte, r *rand.Rand) []byte {
	from := r.IntN(t.accounts)
	to := r.IntN(t.accounts - 1)
	if to >= from {
		to++ // uniform over the other accounts
	}
	b = append(b, `{"id":"`...)
	b = append(b, t.idPrefix...)
	b = append(b, t.seq...)
	t.seq.Inc()
	b = append(b, `","from":"`...)
	b = append(b, t.prefix...)
	b = strconv.AppendInt(b, int64(from), 10)
	b = append(b, `","to":"`...)
	b = append(b, t.prefix...)
	b = strconv.AppendInt(b, int64(to), 10)
	b = append(b, `","amount":`...)
	b = strconv.AppendInt(b, 1+r.Int64N(t.amountMax), 10)
	return append(b, '}')
}

// judge turns a reply into an Outcome; for a batch it also notes why
// individual items failed.
func (t *transferVU) judge(vu *load.VU, status int, reply []byte, err error) measure.Outcome {
	o := measure.Outcome{Ops: max(t.batch, 1)}
	switch {
	case err != nil:
		o.Failure, o.Detail = httpc.ErrorKey(err), err.Error()
	case status < 200 || status > 299:
		o.Failure, o.Detail = httpc.StatusKey(status, reply), httpc.ProblemDetail(reply)
		o.Refused = status == http.StatusServiceUnavailable && t.ep.RetryAfter() > 0
	case t.batch > 0:
		failed, reasons, ok := JudgeBatch(reply, t.batch)
		if !ok {
			o.Failure, o.Detail = fmt.Sprintf("%d bad_batch_reply", status), httpc.ProblemDetail(reply)
			break
		}
		o.FailedOps = failed
		for _, r := range reasons {
			vu.NoteOpFailures(r.key, r.n, r.detail)
		}
	}
	return o
}

// batchReason is one failure key of a batch reply, with how many items
// failed for it and the first one's detail.
type batchReason struct {
	key    string
	n      int64
	detail string
}

// JudgeBatch checks a batch reply of want results. The common case, every
// item accepted, is settled by a scan for the status fields, much cheaper
// than decoding thousands of results; anything else is decoded in full to
// learn why items failed. ok is false if the reply is not want results.
func JudgeBatch(reply []byte, want int) (failed int, reasons []batchReason, ok bool) {
	if n, bad := scanStatuses(reply); n == want && bad == 0 {
		return 0, nil, true
	}
	var br struct {
		Results []struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
			Detail string `json:"detail"`
		} `json:"results"`
	}
	if err := json.Unmarshal(reply, &br); err != nil || len(br.Results) != want {
		return 0, nil, false
	}
	index := map[string]int{}
	for _, it := range br.Results {
		if it.Status >= 200 && it.Status <= 299 {
			continue
		}
		failed++
		key := fmt.Sprintf("%d %s", it.Status, it.Code)
		i, seen := index[key]
		if !seen {
			i = len(reasons)
			index[key] = i
			reasons = append(reasons, batchReason{key: key, detail: it.Detail})
		}
		reasons[i].n++
	}
	return failed, reasons, true
}

// scanStatuses counts the `"status":` fields of a reply and those whose
// value is not 2xx. It hops from colon to colon, checking the key before
// each: colons are a few per item, where a search for the whole key would
// stop at every one of the far more frequent quotes.
func scanStatuses(reply []byte) (n, bad int) {
	const key = `"status"`
	for i := 0; ; {
		j := bytes.IndexByte(reply[i:], ':')
		if j < 0 {
			return n, bad
		}
		i += j + 1
		if i-1 < len(key) || string(reply[i-1-len(key):i-1]) != key {
			continue
		}
		n++
		if v := reply[i:]; len(v) < 3 || v[0] != '2' || !isDigit(v[1]) || !isDigit(v[2]) {
			bad++
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
