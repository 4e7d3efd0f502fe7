//go:build unix

package measure

import (
	"syscall"
	"time"
)

// ProcessCPU returns the user plus system CPU time this process has used,
// or -1 if the system will not say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
