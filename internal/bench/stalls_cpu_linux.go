package bench

import "github.com/prometheus/procfs"

// machineCPU reads the cpu line of /proc/stat: the machine's CPU time so
// far, every CPU together.
func machineCPU() (procfs.CPUStat, bool) {
	return readCPUStat(procfs.DefaultMountPoint)
}
