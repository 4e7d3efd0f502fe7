package ledgerapi

import (
	"slices"
	"strconv"
	"time"

	"github.com/surge-dev/surge/internal/jsonw"
	"github.com/surge-dev/surge/internal/ledger"
)

// Replies are built by appending to a byte slice (package jsonw) rather
// than with encoding/json. The tests decode every shape back with
// encoding/json to check the output.

// The reply primitives are jsonw's; these short names keep the encoders
// below readable.
func appendString(b []byte, s string) []byte            { return jsonw.AppendString(b, s) }
func appendKey(b []byte, name string) []byte            { return jsonw.AppendKey(b, name) }
func appendInt(b []byte, name string, v int64) []byte   { return jsonw.AppendInt(b, name, v) }
func appendUint(b []byte, name string, v uint64) []byte { return jsonw.AppendUint(b, name, v) }
func appendBool(b []byte, name string, v bool) []byte   { return jsonw.AppendBool(b, name, v) }
func appendStr(b []byte, name, v string) []byte         { return jsonw.AppendStr(b, name, v) }
func appendTime(b []byte, name string, t time.Time) []byte {
	return jsonw.AppendTime(b, name, t)
}

// appendTransfer appends the transfer object of docs/API.md.
func appendTransfer(b []byte, t *ledger.Transfer) []byte {
	b = appendStr(b, `{"id":`, t.ID)
	b = appendStr(b, `,"from":`, t.From)
	b = appendStr(b, `,"to":`, t.To)
	b = appendInt(b, `,"amount":`, t.Amount)
	b = appendStr(b, `,"currency":`, t.Currency)
	b = appendStr(b, `,"memo":`, t.Memo)
	b = appendStr(b, `,"state":`, t.State.String())
	b = appendBool(b, `,"pending":`, t.TwoPhase)
	b = appendInt(b, `,"posted_amount":`, t.PostedAmount)
	b = appendInt(b, `,"timeout_ms":`, t.Timeout.Milliseconds())
	b = appendTime(b, `,"created_at":`, t.CreatedAt)
	b = appendTime(b, `,"updated_at":`, t.UpdatedAt)
	if exp := t.ExpiresAt(); !exp.IsZero() {
		b = appendTime(b, `,"expires_at":`, exp)
	}
	return append(b, '}')
}

// appendAccount appends the account object of docs/API.md.
func appendAccount(b []byte, a *ledger.Account) []byte {
	b = appendStr(b, `{"id":`, a.ID)
	b = appendStr(b, `,"currency":`, a.Currency)
	b = appendInt(b, `,"balance":`, a.Balance)
	b = appendInt(b, `,"pending":`, a.Pending)
	b = appendInt(b, `,"available":`, a.Available())
	b = appendInt(b, `,"overdraft_limit":`, a.OverdraftLimit)
	b = appendStringMap(appendKey(b, `,"metadata":`), a.Metadata)
	b = appendBool(b, `,"system":`, a.System())
	b = appendUint(b, `,"entries":`, a.Entries)
	b = appendTime(b, `,"created_at":`, a.CreatedAt)
	return append(b, '}')
}

// sortedKeys returns m's keys in order, so that replies are deterministic.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(append(appendString(b, k), ':'), m[k])
	}
	return append(b, '}')
}

func appendIntMap(b []byte, m map[string]int64) []byte {
	b = append(b, '{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(appendString(b, k), ':'), m[k], 10)
	}
	return append(b, '}')
}

// appendHistory appends a history page.
func appendHistory(b []byte, p *ledger.HistoryPage) []byte {
	b = append(b, `{"items":[`...)
	for i := range p.Entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEntry(b, &p.Entries[i])
	}
	b = append(b, `],"next_cursor":"`...)
	if p.NextCursor != 0 {
		b = strconv.AppendUint(b, p.NextCursor, 10)
	}
	return append(b, `"}`...)
}

func appendEntry(b []byte, e *ledger.Entry) []byte {
	b = appendUint(b, `{"seq":`, e.Seq)
	b = appendStr(b, `,"transfer_id":`, e.TransferID)
	b = appendStr(b, `,"direction":`, e.Direction.String())
	b = appendInt(b, `,"amount":`, e.Amount)
	b = appendInt(b, `,"balance_after":`, e.BalanceAfter)
	b = appendStr(b, `,"counterpart":`, e.Counterpart)
	b = appendStr(b, `,"memo":`, e.Memo)
	b = appendTime(b, `,"created_at":`, e.At)
	return append(b, '}')
}

// appendStats appends the ledger totals.
func appendStats(b []byte, s *ledger.Stats) []byte {
	b = appendInt(b, `{"accounts":`, s.Accounts)
	b = appendIntMap(appendKey(b, `,"balance_sum":`), s.BalanceSum)
	if s.CreditsInFlight != nil { // a cluster's (ledger.Stats)
		b = appendIntMap(appendKey(b, `,"credits_in_flight":`), s.CreditsInFlight)
	}
	return append(b, '}')
}

// appendProblem appends an RFC 9457 problem document.
func appendProblem(b []byte, p *problem) []byte {
	b = append(b, `{"type":"https://surge.dev/problems/`...)
	b = append(b, p.code...) // codes are lower-case ASCII words
	b = appendStr(b, `","title":`, titleOf(p.code))
	b = appendInt(b, `,"status":`, int64(p.status))
	b = appendStr(b, `,"code":`, p.code)
	b = appendStr(b, `,"detail":`, p.detail)
	return append(b, '}')
}

// itemResult is the outcome of one batch item as sent to the client.
type itemResult struct {
	id     string
	status int
	code   string // "" on success
	detail string
}
