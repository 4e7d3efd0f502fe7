package h2

import "time"

// checkAlive runs PingAfter after the connection's last frame: a
// connection silent for that long is sent a PING, and one that sends
// nothing for PingTimeout after it is closed. Any frame the client sends
// shows it alive, the PING's acknowledgement among them.
func (c *conn) checkAlive() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.final {
		return
	}
	now := time.Now()
	last := time.Unix(0, c.lastRead.Load())
	if !c.pingAt.IsZero() && !last.After(c.pingAt) {
		c.srv.countError("conn_ping_timeout")
		_ = c.nc.SetReadDeadline(now) // the reader ends, and finish closes
		return
	}
	c.pingAt = time.Time{}
	if silent := now.Sub(last); silent < c.srv.PingAfter {
		c.pinger.Reset(c.srv.PingAfter - silent)
		return
	}
	_ = c.wfr.WritePing(false, [8]byte{'s', 'u', 'r', 'g', 'e'})
	c.kick()
	c.pingAt = now
	c.pinger.Reset(c.pingTimeout())
}

// pingTimeout is PingTimeout, 15 s if unset.
func (c *conn) pingTimeout() time.Duration {
	if c.srv.PingTimeout > 0 {
		return c.srv.PingTimeout
	}
	return 15 * time.Second
}
