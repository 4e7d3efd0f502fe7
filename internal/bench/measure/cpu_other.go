//go:build !unix

package measure

import "time"

// ProcessCPU is unknown on this platform.
func ProcessCPU() time.Duration { return -1 }
