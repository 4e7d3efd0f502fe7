package tpcb

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/load"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/transfer"
	"github.com/surge-dev/surge/internal/bench/units"
)

// setupWorkers is how many account creations setup keeps in flight: as
// the transfer scenario's, wide, so that they share fsyncs.
const setupWorkers = 256

// overdraft lets accounts, tellers and branches go as negative as
// pgbench's balances may: TPC-B has no floor.
const overdraft = 1 << 50

// surgeTarget runs the transaction on surge's ledger.
type surgeTarget struct {
	cfg    Config
	client *httpc.HTTPClient
}

func openSurge(ctx context.Context, cfg Config, progress *report.Progress) (*surgeTarget, error) {
	client, err := cfg.HTTPClient(max(cfg.VUs, setupWorkers))
	if err != nil {
		return nil, err
	}
	s := &surgeTarget{cfg: cfg, client: client}
	if err := bench.CheckReady(ctx, client); err != nil {
		client.Close()
		return nil, err
	}
	if !cfg.NoSetup {
		t0 := time.Now()
		if err := s.setup(ctx); err != nil {
			client.Close()
			return nil, err
		}
		progress.Printf("setup: surge: %s accounts, %d tellers, %d branches ready in %s",
			units.Thousands(int64(cfg.accounts())), 10*cfg.Scale, cfg.Scale, units.K6Duration(time.Since(t0)))
	}
	return s, nil
}

func (s *surgeTarget) name() string { return Surge }
func (s *surgeTarget) close()       { s.client.Close() }

// id is the ledger account of pgbench's row kind ('a', 't' or 'b') n.
func (s *surgeTarget) id(kind byte, n int) string {
	return s.cfg.Prefix + string(kind) + strconv.Itoa(n)
}

// setup opens every account, teller and branch, with no floor, in @world's
// currency.
func (s *surgeTarget) setup(ctx context.Context) error {
	a, t := s.cfg.accounts(), 10*s.cfg.Scale
	return bench.CreateAccounts(ctx, s.client, setupWorkers, a+t+s.cfg.Scale, func(b []byte, i int) ([]byte, string) {
		var id string
		switch {
		case i < a:
			id = s.id('a', i+1)
		case i < a+t:
			id = s.id('t', i-a+1)
		default:
			id = s.id('b', i-a-t+1)
		}
		return fmt.Appendf(b, `{"id":%q,"currency":"USD","overdraft_limit":%d}`, id, overdraft), id
	})
}

func (s *surgeTarget) prepare(ctx context.Context, _ *load.VU) (load.Iteration, error) {
	ep := s.client.Endpoint(ctx, http.MethodPost, "/v1/transfers/batch")
	var uri []byte
	return func(ctx context.Context, vu *load.VU) {
		t := s.cfg.draw(vu.Rand)
		body := s.appendBatch(ep.Body(), t)
		start := time.Now()
		status, reply, err := ep.Send(body)
		o := judgeBatch(status, reply, err)
		if o.Failure == "" {
			uri = append(append(uri[:0], "/v1/accounts/"...), s.id('a', t.aid)...)
			status, reply, err = ep.SendURI(http.MethodGet, uri, nil)
			o = judgeRead(status, reply, err)
		}
		if err != nil && ctx.Err() != nil {
			return // interrupted: not the server's failure
		}
		vu.Record(start, o)
	}, nil
}

// appendBatch appends the transaction as one atomic batch: the delta moves
// between @world and each of the account, the teller and the branch.
func (s *surgeTarget) appendBatch(b []byte, t txn) []byte {
	b = append(b, `{"atomic":true,"transfers":[`...)
	for i, leg := range [3]string{s.id('a', t.aid), s.id('t', t.tid), s.id('b', t.bid)} {
		if i > 0 {
			b = append(b, ',')
		}
		from, to, amount := "@world", leg, t.delta
		if amount < 0 {
			from, to, amount = leg, "@world", -amount
		}
		b = fmt.Appendf(b, `{"from":%q,"to":%q,"amount":%d}`, from, to, amount)
	}
	return append(b, "]}"...)
}

func judgeBatch(status int, reply []byte, err error) measure.Outcome {
	switch {
	case err != nil:
		return measure.Outcome{Failure: httpc.ErrorKey(err), Detail: err.Error()}
	case status != http.StatusOK:
		return measure.Outcome{Failure: httpc.StatusKey(status, reply), Detail: httpc.ProblemDetail(reply)}
	}
	if failed, _, ok := transfer.JudgeBatch(reply, 3); !ok || failed > 0 {
		return measure.Outcome{Failure: fmt.Sprintf("%d bad_batch_reply", status), Detail: string(reply)}
	}
	return measure.Outcome{}
}

func judgeRead(status int, reply []byte, err error) measure.Outcome {
	switch {
	case err != nil:
		return measure.Outcome{Failure: httpc.ErrorKey(err), Detail: err.Error()}
	case status != http.StatusOK:
		return measure.Outcome{Failure: httpc.StatusKey(status, reply), Detail: httpc.ProblemDetail(reply)}
	}
	return measure.Outcome{}
}

// consistency checks what TPC-B asks of the branches and tellers: their
// balances add up to the same total, every transaction having moved each
// by the same delta. (The accounts' sum is the same again; reading every
// account back would take longer than the run.)
func (s *surgeTarget) consistency(ctx context.Context) string {
	sum := func(kind byte, n int) (int64, error) {
		ep := s.client.Endpoint(ctx, http.MethodGet, "/")
		defer ep.Close()
		var total int64
		for i := 1; i <= n; i++ {
			status, reply, err := ep.SendURI(http.MethodGet, []byte("/v1/accounts/"+s.id(kind, i)), nil)
			if err != nil {
				return 0, err
			}
			if status != http.StatusOK {
				return 0, fmt.Errorf("%s: %s", s.id(kind, i), httpc.StatusKey(status, reply))
			}
			b, err := balanceOf(reply)
			if err != nil {
				return 0, err
			}
			total += b
		}
		return total, nil
	}
	branches, err := sum('b', s.cfg.Scale)
	if err != nil {
		return "unknown: " + err.Error()
	}
	tellers, err := sum('t', 10*s.cfg.Scale)
	if err != nil {
		return "unknown: " + err.Error()
	}
	return consistencyText(branches, tellers)
}

func consistencyText(sums ...int64) string {
	for _, v := range sums[1:] {
		if v != sums[0] {
			return fmt.Sprintf("BROKEN: sums %v differ", sums)
		}
	}
	return fmt.Sprintf("ok: every sum is %d", sums[0])
}

// balanceOf reads an account's balance from GET /v1/accounts/{id}'s reply.
func balanceOf(reply []byte) (int64, error) {
	var a struct {
		Balance *int64 `json:"balance"`
	}
	if err := json.Unmarshal(reply, &a); err != nil || a.Balance == nil {
		return 0, fmt.Errorf("no balance in %q", reply)
	}
	return *a.Balance, nil
}
