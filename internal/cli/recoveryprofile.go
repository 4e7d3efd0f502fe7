package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startRecoveryProfile starts a CPU profile written to path (none if path
// is empty) and returns the function that ends it: `--recovery-profile`,
// for `go tool pprof` on what a restart spends until it is ready.
func startRecoveryProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--recovery-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--recovery-profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
