//go:build unix

package telemetry

import "syscall"

// contextSwitches returns the process's voluntary and involuntary context
// switches, over all its threads (/proc/self/status counts only the main
// thread's).
func contextSwitches() (voluntary, involuntary int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	return int64(ru.Nvcsw), int64(ru.Nivcsw), true
}
