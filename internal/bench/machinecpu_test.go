package bench

import (
	"runtime"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want cpuTimes
		ok   bool
	}{
		{"current kernel, guest columns ignored",
			"cpu  100 5 50 800 20 3 2 40 7 1\ncpu0 50 2 25 400 10 1 1 20 3 0\n",
			cpuTimes{total: 100 + 5 + 50 + 800 + 20 + 3 + 2 + 40, steal: 40}, true},
		{"before 2.6.11, no steal column", "cpu 10 0 5 80 3 1 1\n", cpuTimes{total: 100}, true},
		{"oldest four columns", "cpu 10 0 5 85", cpuTimes{total: 100}, true},
		{"a per-CPU line first", "cpu0 10 0 5 85\n", cpuTimes{}, false},
		{"too few columns", "cpu 10 0 5\n", cpuTimes{}, false},
		{"not a number", "cpu 10 x 5 85\n", cpuTimes{}, false},
		{"empty", "", cpuTimes{}, false},
	} {
		got, ok := parseProcStat([]byte(c.in))
		if ok != c.ok || got != c.want {
			t.Errorf("%s: parseProcStat = %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestMachineCPUBetween(t *testing.T) {
	a := &cpuTimes{total: 1000, steal: 10}
	b := &cpuTimes{total: 1200, steal: 30}
	got := machineCPUBetween(a, b)
	if got == nil || got.Steal != 0.1 { // 20 of 200 ticks
		t.Fatalf("machineCPUBetween = %+v, want steal 0.1", got)
	}
	for _, c := range [][2]*cpuTimes{{nil, b}, {a, nil}, {a, a}} {
		if got := machineCPUBetween(c[0], c[1]); got != nil {
			t.Errorf("machineCPUBetween(%v, %v) = %+v, want nil", c[0], c[1], got)
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
	got := readCPUTimes()
	if runtime.GOOS != "linux" {
		if got != nil {
			t.Fatalf("readCPUTimes on %s = %+v, want nil", runtime.GOOS, got)
		}
		return
	}
	if got == nil || got.total == 0 || got.steal > got.total {
		t.Fatalf("readCPUTimes = %+v: want a total covering steal", got)
	}
}
