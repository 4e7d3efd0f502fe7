package measure

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strings"
	"sync"
)

// Machine describes where the load generator ran, so that figures are
// quoted with the hardware that produced them.
type Machine struct {
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpu_model,omitempty"`
	Hostname   string `json:"hostname,omitempty"`
	Kernel     string `json:"kernel,omitempty"`
	GoVersion  string `json:"go_version"`
}

// CurrentMachine describes this machine. Kernel and CPU model come from
// /proc where it exists and are empty elsewhere.
func CurrentMachine() Machine { return currentMachine() }

var currentMachine = sync.OnceValue(func() Machine {
	host, _ := os.Hostname()
	return Machine{
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPUModel:   cpuModel(),
		Hostname:   host,
		Kernel:     kernel(),
		GoVersion:  runtime.Version(),
	}
})

// kernel is what `uname -sr` prints, read from /proc to avoid a cgo or
// x/sys dependency for one string.
func kernel() string {
	ostype, err1 := os.ReadFile("/proc/sys/kernel/ostype")
	release, err2 := os.ReadFile("/proc/sys/kernel/osrelease")
	if err1 != nil || err2 != nil {
		return ""
	}
	return strings.TrimSpace(string(ostype)) + " " + strings.TrimSpace(string(release))
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
