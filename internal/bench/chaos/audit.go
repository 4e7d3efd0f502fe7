package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// audit checks the restarted server against the history: every
// acknowledged write there with its value, nothing refused visible, money
// conserved, every balance equal to the sum of its history, every paid
// reservation paid and no seat sold twice.
func audit(ctx context.Context, c *client, h *history, rep *Report) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	rep.audits++
	for _, check := range []func(context.Context, *client, *history, *Report) error{
		auditTransfers, auditBalances, auditReservations, auditKeys,
	} {
		if err := check(ctx, c, h, rep); err != nil {
			return err
		}
	}
	rep.counts = h.counts
	return nil
}

type transferReply struct {
	Amount int64  `json:"amount"`
	State  string `json:"state"`
}

func auditTransfers(ctx context.Context, c *client, h *history, rep *Report) error {
	for id, t := range h.transfers {
		if t.out == unknown {
			continue
		}
		st, body, err := c.do(ctx, http.MethodGet, "/v1/transfers/"+url.PathEscape(id), nil)
		if err != nil {
			return err
		}
		var got transferReply
		switch {
		case t.out == refused && st != http.StatusNotFound:
			rep.anomaly(t.op, "refused transfer %s is visible (%d %s)", id, st, body)
		case t.out == acked && st != http.StatusOK:
			rep.lose(t.op, "acknowledged transfer %s: %d %s", id, st, body)
		case t.out == acked && (json.Unmarshal(body, &got) != nil || got.Amount != t.req.Amount):
			rep.lose(t.op, "acknowledged transfer %s reads %s", id, body)
		case t.out == acked && h.holds[id] != "" && got.State != h.holds[id]+"ed":
			rep.lose(opTwoPhase, "two-phase %s was %sed, reads %s", id, h.holds[id], got.State)
		}
	}
	return nil
}

type entry struct {
	Direction string `json:"direction"`
	Amount    int64  `json:"amount"`
}

func auditBalances(ctx context.Context, c *client, _ *history, rep *Report) error {
	var stats struct {
		BalanceSum map[string]int64 `json:"balance_sum"`
	}
	if err := getJSON(ctx, c, "/v1/ledger/stats", &stats); err != nil {
		return err
	}
	for cur, sum := range stats.BalanceSum {
		if sum != 0 {
			rep.anomaly(opTransfer, "balances in %s sum to %d, not 0", cur, sum)
		}
	}
	for i := range accounts {
		var a struct {
			Balance int64 `json:"balance"`
		}
		if err := getJSON(ctx, c, "/v1/accounts/"+account(i), &a); err != nil {
			return err
		}
		sum, err := historySum(ctx, c, account(i))
		if err != nil {
			return err
		}
		if sum != a.Balance {
			rep.anomaly(opTransfer, "%s's balance %d, its history sums to %d", account(i), a.Balance, sum)
		}
	}
	return nil
}

// historySum adds up an account's whole history, page by page.
func historySum(ctx context.Context, c *client, id string) (int64, error) {
	var sum int64
	cursor := ""
	for {
		var page struct {
			Items      []entry `json:"items"`
			NextCursor string  `json:"next_cursor"`
		}
		if err := getJSON(ctx, c, "/v1/accounts/"+id+"/transfers?limit=1000&cursor="+url.QueryEscape(cursor), &page); err != nil {
			return 0, err
		}
		for _, e := range page.Items {
			if e.Direction == "credit" {
				sum += e.Amount
			} else {
				sum -= e.Amount
			}
		}
		if page.NextCursor == "" {
			return sum, nil
		}
		cursor = page.NextCursor
	}
}

func auditReservations(ctx context.Context, c *client, h *history, rep *Report) error {
	held := map[seat]string{}
	for _, r := range h.paid {
		var got reservation
		if err := getJSON(ctx, c, "/v1/reservation/"+r.ID+"?wait=0s", &got); err != nil {
			rep.lose(opReserve, "paid reservation %s: %v", r.ID, err)
			continue
		}
		if got.State != "PAID" {
			rep.lose(opReserve, "paid reservation %s reads %s", r.ID, got.State)
		}
		for _, s := range r.Seats {
			if other, dup := held[s]; dup && other != r.ID {
				rep.anomaly(opReserve, "seat %v sold to %s and %s", s, other, r.ID)
			}
			held[s] = r.ID
		}
	}
	return nil
}

func auditKeys(ctx context.Context, c *client, h *history, rep *Report) error {
	for key, k := range h.keys {
		st, body, err := c.do(ctx, http.MethodGet, "/v0/entity?id="+url.QueryEscape(key), nil)
		if err != nil {
			return err
		}
		got := ""
		if st == http.StatusOK {
			got = string(body)
		} else if st != http.StatusNotFound {
			return fmt.Errorf("GET %s: %d %s", key, st, body)
		}
		if got != k.value && !slices.Contains(k.pending, got) {
			rep.lose(opKV, "key %s reads %q, acknowledged %q", key, got, k.value)
		}
	}
	return nil
}

func getJSON(ctx context.Context, c *client, path string, v any) error {
	st, body, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if st != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, st, body)
	}
	return json.Unmarshal(body, v)
}
