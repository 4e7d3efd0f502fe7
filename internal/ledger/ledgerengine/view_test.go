package ledgerengine

import (
	"testing"

	"github.com/surge-dev/surge/internal/ledger"
)

func TestViewCurrency(t *testing.T) {
	v := newView()
	v.store(&ledger.Account{ID: "usd", Currency: "USD", Balance: 5})
	v.store(&ledger.Account{ID: "blank"})
	for _, tc := range []struct {
		id, currency string
		ok           bool
	}{
		{"usd", "USD", true},
		{"blank", "", true}, // an account without a currency still exists
		{"absent", "", false},
	} {
		if c, ok := v.currency(tc.id); c != tc.currency || ok != tc.ok {
			t.Errorf("currency(%q) = %q, %v; want %q, %v", tc.id, c, ok, tc.currency, tc.ok)
		}
	}
}
