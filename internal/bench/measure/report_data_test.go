package measure

import (
	"fmt"
	"testing"
	"time"
)

func TestSalesTallyCurve(t *testing.T) {
	origin := time.Now()
	a, b := NewSalesTally(origin), NewSalesTally(origin)
	a.Add(origin.Add(200*time.Millisecond), 2)
	a.Add(origin.Add(-time.Second), 1) // before the start: second 0
	b.Add(origin.Add(2500*time.Millisecond), 4)
	a.Add(origin.Add(900*time.Millisecond), 1)
	a.Merge(b)
	got := a.Curve()
	want := []SalePoint{{0, 0}, {1, 4}, {2, 4}, {3, 8}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("curve %v, want %v", got, want)
	}
	if NewSalesTally(origin).Curve() != nil {
		t.Error("a tally without sales has a curve")
	}
}
