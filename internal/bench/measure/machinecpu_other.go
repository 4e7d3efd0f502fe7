//go:build !linux

package measure

// ReadCPUTimes is unknown outside Linux: summaries then leave out the
// machine_cpu row.
func ReadCPUTimes() *CPUTimes { return nil }
