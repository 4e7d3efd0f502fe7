package measure

import (
	"runtime"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want CPUTimes
		ok   bool
	}{
		{"current kernel, guest columns ignored",
			"cpu  100 5 50 800 20 3 2 40 7 1\ncpu0 50 2 25 400 10 1 1 20 3 0\n",
			CPUTimes{total: 100 + 5 + 50 + 800 + 20 + 3 + 2 + 40, steal: 40}, true},
		{"before 2.6.11, no steal column", "cpu 10 0 5 80 3 1 1\n", CPUTimes{total: 100}, true},
		{"oldest four columns", "cpu 10 0 5 85", CPUTimes{total: 100}, true},
		{"a per-CPU line first", "cpu0 10 0 5 85\n", CPUTimes{}, false},
		{"too few columns", "cpu 10 0 5\n", CPUTimes{}, false},
		{"not a number", "cpu 10 x 5 85\n", CPUTimes{}, false},
		{"empty", "", CPUTimes{}, false},
	} {
		got, ok := parseProcStat([]byte(c.in))
		if ok != c.ok || got != c.want {
			t.Errorf("%s: parseProcStat = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestMachineCPUBetween(t *testing.T) {
	a := &CPUTimes{total: 1000, steal: 10}
	b := &CPUTimes{total: 1200, steal: 30}
	got := MachineCPUBetween(a, b)
	if got == nil || got.Steal != 0.1 { // 20 of 200 ticks
		t.Fatalf("MachineCPUBetween = %+v, want steal 0.1", got)
	}
	for _, c := range [][2]*CPUTimes{{nil, b}, {a, nil}, {a, a}} {
		if got := MachineCPUBetween(c[0], c[1]); got != nil {
			t.Errorf("MachineCPUBetween(%v, %v) = %+v, want nil", c[0], c[1], got)
		}
	}
}

func TestMachineCPUString(t *testing.T) {
	if got, want := (MachineCPU{Steal: 0.02}).String(), "2% stolen by the hypervisor"; got != want {
		t.Errorf("quiet: %q, want %q", got, want)
	}
	if got, want := (MachineCPU{Steal: 0.25}).String(),
		"25% stolen by the hypervisor (not comparable with a quiet run)"; got != want {
		t.Errorf("noisy: %q, want %q", got, want)
	}
}

func TestReadCPUTimes(t *testing.T) {
	got := ReadCPUTimes()
	if runtime.GOOS != "linux" {
		if got != nil {
			t.Fatalf("ReadCPUTimes on %s = %+v, want nil", runtime.GOOS, got)
		}
		return
	}
	if got == nil || got.total == 0 || got.steal > got.total {
		t.Fatalf("ReadCPUTimes = %+v: want a total covering steal", got)
	}
}
