package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockError explains a failure to open dir when another process holds
// Pebble's lock on it: Pebble's own error is the bare errno of fcntl
// ("resource temporarily unavailable"). The lock is a POSIX record lock
// on dir/LOCK, so F_GETLK names the process that holds it. Other errors
// pass through.
func lockError(dir string, err error) error {
	if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES) {
		return err
	}
	pid, ok := lockHolder(filepath.Join(dir, "LOCK"))
	if !ok {
		return err
	}
	return fmt.Errorf("another process (pid %d, likely another surge) holds the data directory %s: stop it, or give this one another --data", pid, dir)
}

// lockHolder returns the pid of the process holding a write lock on path.
func lockHolder(path string) (int, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil || lk.Type == unix.F_UNLCK {
		return 0, false
	}
	return int(lk.Pid), true
}
