//go:build !unix

package telemetry

// contextSwitches is unknown where getrusage does not exist.
func contextSwitches() (voluntary, involuntary int64, ok bool) { return 0, 0, false }
