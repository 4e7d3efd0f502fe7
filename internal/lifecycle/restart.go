package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/surge-dev/surge/internal/store"
)

// A store whose disk fails a write refuses writes from then on and serves
// reads from its committed state (store/fault.go); the engine's Books are
// ahead of that state, so writes can only resume from the disk, as a
// restart recovers. StorageFaults says so once per store (log, metric,
// /readyz) and, once the disk takes writes again, restarts the process in
// place: it execs itself, handing the listening socket over, so that the
// port stays open and clients queue rather than being refused.

// listenFDEnv names the variable through which a restarting surge hands
// its listening socket to its next image.
const listenFDEnv = "SURGE_INHERITED_LISTENER_FD"

// Resume checks: how often the disk is probed, how much room it must have
// (beyond a memtable flush's worth of headroom, writes would fail again
// at once), and the size of the file a probe writes and fsyncs.
const (
	resumeEvery     = time.Second
	resumeFreeBytes = 32 << 20
	probeBytes      = 1 << 20
)

// StorageFaults gathers the stores' write faults.
type StorageFaults struct {
	log     *slog.Logger
	gauge   *prometheus.GaugeVec
	faulted chan struct{} // closed at the first fault

	mu      sync.Mutex
	reasons []string
	unready func(reason string) // set once /readyz exists
}

func NewStorageFaults(reg prometheus.Registerer, log *slog.Logger) *StorageFaults {
	f := &StorageFaults{log: log, faulted: make(chan struct{})}
	f.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "surge_storage_write_fault",
		Help: "1 while a store refuses writes because its disk failed one: kind full (no space left) or unavailable (another write error). Reads are served meanwhile; writes resume by a restart in place once the disk takes writes again.",
	}, []string{"store", "kind"})
	reg.MustRegister(f.gauge)
	return f
}

// Hook is the OnFault of the store named name.
func (f *StorageFaults) Hook(name string) func(*store.Fault) {
	return func(fault *store.Fault) {
		kind := "unavailable"
		if errors.Is(fault, store.ErrFull) {
			kind = "full"
		}
		f.gauge.WithLabelValues(name, kind).Set(1)
		reason := fmt.Sprintf("%s storage %s: writes are refused, reads are served", name, kind)
		f.log.Error("storage refuses writes; reads go on from committed state, and writes resume by a restart in place once the disk takes writes again",
			"store", name, "kind", kind, "err", fault.Cause)
		f.mu.Lock()
		first := len(f.reasons) == 0
		f.reasons = append(f.reasons, reason)
		unready := f.unready
		f.mu.Unlock()
		if unready != nil {
			unready(reason)
		}
		if first {
			close(f.faulted)
		}
	}
}

// ReportTo has unready told of every fault, past and future.
func (f *StorageFaults) ReportTo(unready func(reason string)) {
	f.mu.Lock()
	f.unready = unready
	reasons := strings.Join(f.reasons, "; ")
	f.mu.Unlock()
	if reasons != "" {
		unready(reasons)
	}
}

// ResumeWhenWritable waits for a fault, then for the disk under dir to
// take writes again, and then restarts the process in place with ln,
// calling stop first. It returns when ctx ends first, or with the error
// that kept it from restarting.
func (f *StorageFaults) ResumeWhenWritable(ctx context.Context, dir string, ln net.Listener, stop func()) error {
	select {
	case <-f.faulted:
	case <-ctx.Done():
		return nil
	}
	tick := time.NewTicker(resumeEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
		if err := probeWritable(dir); err != nil {
			continue
		}
		f.log.Warn("the disk takes writes again: restarting in place to resume writes from the committed state", "dir", dir)
		return reexec(ln, stop)
	}
}

// probeWritable reports whether dir's file system has room for writes
// again: enough free space, and a file written and fsynced there.
func probeWritable(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return err
	}
	if free := int64(st.Bavail) * st.Bsize; free < resumeFreeBytes {
		return fmt.Errorf("%d bytes free", free)
	}
	p := filepath.Join(dir, ".surge-write-probe")
	defer os.Remove(p)
	fh, err := os.Create(p)
	if err != nil {
		return err
	}
	_, err = fh.Write(make([]byte, probeBytes))
	if err == nil {
		err = fh.Sync()
	}
	return errors.Join(err, fh.Close())
}

// reexec stops serving and replaces the process with a new run of the same
// command, which takes over ln (see Listen).
func reexec(ln net.Listener, stop func()) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return fmt.Errorf("restart in place: listener %T cannot be handed over", ln)
	}
	fh, err := tl.File()
	if err != nil {
		return err
	}
	fd := fh.Fd()
	if _, err := unix.FcntlInt(fd, unix.F_SETFD, 0); err != nil { // keep it open across exec
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	env := []string{listenFDEnv + "=" + strconv.FormatUint(uint64(fd), 10)}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, listenFDEnv+"=") {
			env = append(env, kv)
		}
	}
	stop()
	return syscall.Exec(exe, os.Args, env)
}

// Listen opens the server's socket on addr, or takes over the one a
// restart in place handed over.
func Listen(addr string) (net.Listener, error) {
	v, ok := os.LookupEnv(listenFDEnv)
	if !ok {
		return net.Listen("tcp", addr)
	}
	_ = os.Unsetenv(listenFDEnv)
	fd, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", listenFDEnv, v, err)
	}
	fh := os.NewFile(uintptr(fd), "inherited-listener")
	defer fh.Close()
	return net.FileListener(fh)
}

// StopServing closes the port's listener and waits a few seconds at most
// for the requests in progress, before a restart in place.
func StopServing(srv interface{ Shutdown(context.Context) error }, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("requests still in progress at the restart in place", "err", err)
	}
}
