package bench

import (
	"os"
	"runtime/pprof"
)

// StartCPUProfile writes a CPU profile of this process to path until the
// returned stop is called; with an empty path it does nothing. It is how
// the load generator's own cost is examined (go tool pprof), and a
// server's restart (surge serve --recovery-profile).
func StartCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
