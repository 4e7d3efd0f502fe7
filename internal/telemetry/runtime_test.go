package telemetry

import (
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRuntimeMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	RegisterRuntime(reg)
	for _, name := range []string{"go_goroutines", "go_sched_latencies_seconds", "process_resident_memory_bytes"} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n == 0 {
			t.Errorf("%s: %d series, %v", name, n, err)
		}
	}
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc/self/io here")
	}
	for name, want := range map[string]int{"surge_process_context_switches_total": 2, "surge_process_io_bytes_total": 2} {
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != want {
			t.Errorf("%s: %d series, want %d (%v)", name, n, want, err)
		}
	}
}
