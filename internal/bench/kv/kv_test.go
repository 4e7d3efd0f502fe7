package kv

import (
	"math"
	"testing"
)

// TestSearchStep walks the search against a server whose capacity is
// known: every rate up to it passes.
func TestSearchStep(t *testing.T) {
	for _, c := range []struct{ start, capacity float64 }{{1000, 13000}, {1000, 1000}, {50000, 12345}, {1000, 0.5}} {
		next := searchStep(c.start)
		pass, fail := 0.0, math.Inf(1)
		probes := 0
		for rate, ok := c.start, true; ok; rate, ok = next(pass, fail) {
			if probes++; probes > 40 {
				t.Fatalf("start %v capacity %v: no end after 40 probes", c.start, c.capacity)
			}
			if rate <= c.capacity {
				pass = max(pass, rate)
			} else {
				fail = min(fail, rate)
			}
		}
		if c.capacity < 1 {
			if pass != 0 {
				t.Errorf("capacity %v: found %v", c.capacity, pass)
			}
			continue
		}
		if pass > c.capacity || pass < c.capacity/(1+searchPrecision)-1 {
			t.Errorf("start %v capacity %v: found %v", c.start, c.capacity, pass)
		}
	}
}

func TestAppendKVKey(t *testing.T) {
	for i, want := range map[int]string{0: "k0000000000", 42: "k0000000042", 1299999: "k0001299999", 9999999999: "k9999999999"} {
		if got := string(appendKVKey([]byte("x"), i)); got != "x"+want {
			t.Errorf("appendKVKey(%d) = %q, want x%s", i, got, want)
		}
	}
}
