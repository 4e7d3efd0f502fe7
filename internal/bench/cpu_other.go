//go:build !unix

package bench

import "time"

// processCPU is unknown on this platform.
func processCPU() time.Duration { return -1 }
