package front

import (
	"errors"
	"sync"
)

// AckDeferrer is implemented by the connections fasthttp serves (reach it
// through RequestCtx.Conn). A handler whose reply acknowledges a write may
// return before the write is durable and pass DeferAck a function that
// waits for it: the connection writes nothing more until every such
// function has returned, and if one fails it closes instead of writing.
//
// Why: fasthttp serves a connection's pipelined requests one after the
// other and writes their replies together once it has run out of requests
// to read. A handler that waited for its own fsync would make the
// connection's writes wait for one fsync each; deferring the wait lets all
// of them share one, while no reply reaches the client before the write it
// acknowledges is durable.
type AckDeferrer interface {
	DeferAck(wait func() error)
}

// errAckFailed closes a connection whose acknowledgement could not be
// made good: the client must not receive the reply.
var errAckFailed = errors.New("front: a deferred write failed; connection closed without replying")

// ackConn is a connection served by fasthttp: a replayConn that holds its
// writes back for the deferred acknowledgements of its replies.
type ackConn struct {
	replayConn
	mu      sync.Mutex // fasthttp writes from its goroutine, but Close may come from Shutdown's
	waits   []func() error
	failure error
}

var _ AckDeferrer = (*ackConn)(nil)

// DeferAck holds the connection's next write back until wait returns.
func (c *ackConn) DeferAck(wait func() error) {
	c.mu.Lock()
	c.waits = append(c.waits, wait)
	c.mu.Unlock()
}

// Write writes p once every deferred acknowledgement is durable.
func (c *ackConn) Write(p []byte) (int, error) {
	if err := c.settle(); err != nil {
		_ = c.replayConn.Close()
		return 0, err
	}
	return c.replayConn.Write(p)
}

// Close waits for the deferred writes, whose waits must run even when no
// reply will be sent, then closes.
func (c *ackConn) Close() error {
	_ = c.settle()
	return c.replayConn.Close()
}

// settle runs the deferred waits in order and reports the first failure,
// which sticks: a reply after a failed acknowledgement must not be sent.
func (c *ackConn) settle() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, wait := range c.waits {
		if err := wait(); err != nil && c.failure == nil {
			c.failure = errors.Join(errAckFailed, err)
		}
	}
	clear(c.waits)
	c.waits = c.waits[:0]
	return c.failure
}
