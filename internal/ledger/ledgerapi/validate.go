package ledgerapi

import (
	"unicode/utf8"

	"github.com/surge-dev/surge/internal/ledger"
)

// idChar marks the bytes allowed in account and transfer ids.
var idChar = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") {
		t[c] = true
	}
	return t
}()

// ValidID reports whether s is a well-formed account or transfer id: 1 to
// ledger.MaxIDLength bytes of [A-Za-z0-9._:-], optionally after a leading '@'
// that marks a system account ("@" alone is not an id).
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > ledger.MaxIDLength {
		return false
	}
	i := 0
	if s[0] == '@' {
		if len(s) == 1 {
			return false
		}
		i = 1
	}
	for ; i < len(s); i++ {
		if !idChar[s[i]] {
			return false
		}
	}
	return true
}

// ValidCurrency reports whether s is a well-formed currency code: 1 to
// ledger.MaxCurrencyLength bytes of [A-Z0-9].
func ValidCurrency(s string) bool {
	if len(s) == 0 || len(s) > ledger.MaxCurrencyLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Messages for invalid values; they tell the client the rule, not just "bad".
const (
	msgID       = "must be 1 to 128 characters from A-Z a-z 0-9 . _ : - (a leading @ marks a system account)"
	msgCurrency = "must be 1 to 12 characters from A-Z 0-9"
	msgAmount   = "must be an integer from 1 to 9007199254740991"
	msgLimit    = "must be an integer from 0 to 9007199254740991"
	msgRequired = "is required"

	msgServerAccount  = "must not start with wallet: (the server assigns those ids)"
	msgServerTransfer = "must not start with wallet: or pay-<reservation id> (the server assigns those ids)"
	msgMemo           = "must be at most 512 bytes"
	msgTimeout        = "must be an integer from 0 to 604800000 (7 days)"

	msgMetadataKeys = "must have at most 16 entries"
	msgMetadataSize = "keys must be 1 to 256 bytes and values at most 256 bytes"
)

// maxTimeoutMS is ledger.MaxTimeout in the unit of timeout_ms.
const maxTimeoutMS = int64(ledger.MaxTimeout / 1e6)

func validAmount(v int64) bool { return v >= 1 && v <= ledger.MaxAmount }

// truncate shortens s to at most n bytes without splitting a UTF-8 sequence,
// so that echoing a client's oversized name in an error stays small.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
