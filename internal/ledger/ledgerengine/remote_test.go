package ledgerengine

import "testing"

// A receiver's currency, once known, is looked up, not stored again: that
// allocates nothing. A currency that differs replaces it; "" is no news.
func TestRemoteCurrencyLearnedOnce(t *testing.T) {
	var r remoteCurrencies
	r.learnOne("a", "EUR")
	if n := testing.AllocsPerRun(100, func() { r.learnOne("a", "EUR") }); n != 0 {
		t.Errorf("learning a known currency allocates %v times", n)
	}
	r.learnOne("a", "")
	if c, ok := r.currency("a"); !ok || c != "EUR" {
		t.Fatalf("after no news, a's currency is %q, %v; want EUR", c, ok)
	}
	r.learnOne("a", "USD")
	if c, _ := r.currency("a"); c != "USD" {
		t.Fatalf("a's currency is %q after USD was learned", c)
	}
}
