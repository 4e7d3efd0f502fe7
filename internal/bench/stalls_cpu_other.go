//go:build !linux

package bench

import "github.com/prometheus/procfs"

// machineCPU is unknown outside Linux: there is no /proc/stat to read.
func machineCPU() (procfs.CPUStat, bool) { return procfs.CPUStat{}, false }
