package measure

import "os"

// ReadCPUTimes reads the machine's CPU times, or nil if /proc/stat cannot
// be read.
func ReadCPUTimes() *CPUTimes {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	t, ok := parseProcStat(data)
	if !ok {
		return nil
	}
	return &t
}
