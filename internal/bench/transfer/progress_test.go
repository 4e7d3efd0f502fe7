package transfer

import (
	"testing"

	"github.com/surge-dev/surge/internal/bench"
)

func TestDecimalCounter(t *testing.T) {
	d := bench.Decimal("0")
	for range 1000 {
		d.Inc()
	}
	if string(d) != "1000" {
		t.Errorf("after 1000 increments: %q", d)
	}
	d = bench.Decimal("99")
	d.Inc()
	if string(d) != "100" {
		t.Errorf("99+1 = %q", d)
	}
}

func TestScanStatuses(t *testing.T) {
	for reply, want := range map[string][2]int{
		`{"results":[{"id":"a:1","status":201},{"id":"b","status":200}]}`:          {2, 0},
		`{"results":[{"id":"a","status":201},{"id":"b","status":422,"code":"x"}]}`: {2, 1},
		`{"results":[{"id":"a","status": 201}]}`:                                   {1, 1}, // unusual spacing: decoded in full instead
		`{"detail":"a \"status\":201 inside a string"}`:                            {0, 0},
		`{"results":[]}`: {0, 0},
	} {
		n, bad := scanStatuses([]byte(reply))
		if [2]int{n, bad} != want {
			t.Errorf("scanStatuses(%s) = %d, %d; want %v", reply, n, bad, want)
		}
	}
}
