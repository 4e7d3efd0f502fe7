package ledgerapi

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/surge-dev/surge/internal/ledger"
)

// Query parameters of the history route.
const (
	qLimit fields = 1 << iota
	qCursor
	qOffset
)

func queryField(key string) fields {
	switch key {
	case "limit":
		return qLimit
	case "cursor":
		return qCursor
	case "offset":
		return qOffset
	}
	return 0
}

// parseHistoryQuery parses the query string of GET /v1/accounts/{id}/transfers
// as strictly as a body: unknown or repeated parameters are errors, and so
// are cursor and offset together. An empty cursor means none, so that a
// client may pass back the empty next_cursor of a last page.
func parseHistoryQuery(raw string) (ledger.HistoryQuery, *inputError) {
	q := ledger.HistoryQuery{Limit: ledger.DefaultPageSize}
	var seen fields
	for raw != "" {
		var part string
		part, raw, _ = strings.Cut(raw, "&")
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		key, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return q, badQuery("query", "is not a valid URL query string")
		}
		f := queryField(key)
		if f == 0 {
			return q, &inputError{kind: errUnknownField, field: truncate(key, 64), msg: "unknown query parameter"}
		}
		if seen&f != 0 {
			return q, &inputError{kind: errDuplicateField, field: key, msg: "given more than once"}
		}
		seen |= f
		if err := setQuery(&q, f, val); err != nil {
			return q, err
		}
	}
	if seen&(qCursor|qOffset) == qCursor|qOffset && q.Cursor != 0 {
		return q, badQuery("offset", "cannot be combined with cursor")
	}
	return q, nil
}

// setQuery stores the value of parameter f in q.
func setQuery(q *ledger.HistoryQuery, f fields, val string) *inputError {
	n, err := strconv.ParseUint(val, 10, 64)
	switch f {
	case qLimit:
		if err != nil || n < 1 || n > ledger.MaxPageSize {
			return badQuery("limit", "must be an integer from 1 to 1000")
		}
		q.Limit = int(n)
	case qCursor:
		if val == "" {
			return nil
		}
		if err != nil || n == 0 {
			return badQuery("cursor", "must be a next_cursor from an earlier page")
		}
		q.Cursor = n
	default: // qOffset
		if err != nil {
			return badQuery("offset", "must be a non-negative integer")
		}
		q.Offset = n
	}
	return nil
}

func badQuery(field, msg string) *inputError {
	return &inputError{kind: errValue, field: field, msg: msg}
}
