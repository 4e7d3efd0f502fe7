//go:build unix

package httpc

import (
	"net"
	"syscall"
	"time"
)

// peerOpen reports whether tc is still usable for a new request: the
// server has neither closed nor reset it, nor sent anything unasked. It
// peeks at the socket without blocking (the socket is non-blocking, as
// all of Go's are, and the callback returns true so Go does not wait for
// readiness) and consumes nothing. One system call; used only on a
// connection that sat idle.
//
// It cannot rule out the server closing the connection right after the
// peek; such a request fails, and is counted as a failure, not resent.
func peerOpen(tc *net.TCPConn) bool {
	// The last request's deadline may have passed while the connection
	// sat idle, and a read after its deadline fails before looking at the
	// socket. The next request sets its own deadline.
	if tc.SetReadDeadline(time.Time{}) != nil {
		return false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		// EAGAIN: nothing to read, the normal state of an idle
		// connection. A byte means the server sent something unasked, 0
		// bytes that it closed, any other error that it reset.
		open = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && open
}
