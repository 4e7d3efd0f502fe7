package peer

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// cappedListener bounds the connections open at once. One over the budget
// is closed as soon as it is accepted, so that a flood of connections
// costs an accept and a close each and never holds up the accept loop
// (x/net/netutil's LimitListener stops accepting instead, which leaves
// the connections over the budget waiting in the kernel's backlog, and a
// peer's link behind them).
type cappedListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused prometheus.Counter
}

func (l *cappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &countedConn{Conn: c, l: l}, nil
		}
		l.open.Add(-1)
		l.refused.Inc()
		_ = c.Close()
	}
}

// countedConn gives its place back to its listener once closed.
type countedConn struct {
	net.Conn
	l    *cappedListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
