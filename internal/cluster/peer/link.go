package peer

import (
	"crypto/tls"
	"net"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// Send sends a command for partition to its owner over the link to it,
// and reports whether it did; false (the caller appends the command to the
// commands topic) when the directory names no other owner, the link is not
// up, or it carries its budget of commands already. Send never waits: a
// link not up is opened in the background for the next commands.
func (p *Peers) Send(partition int32, key, value []byte) bool {
	if p == nil {
		return false
	}
	rid, ok := requestID(key)
	if !ok || entrySize(key, value) > maxMessage {
		return false
	}
	node, e, ok := p.dir.lookup(partition)
	if !ok || node == p.cfg.Node {
		return false
	}
	l := p.linkTo(node, e)
	if l == nil || !l.send(partition, rid, key, value) {
		p.met.fallbacks.Inc()
		return false
	}
	p.met.sent.Inc()
	return true
}

// Forward sends a forward or an answer of the node's rounds
// (kafkalog.ForwardTag, kafkalog.AnswerTag values) for partition to its
// owner over the link to it, and reports whether it did; false as for
// Send, or for a value of another kind. No call waits for it: it takes no
// part of the link's budget, and the owner answers nothing. One lost with
// its link is sent again by the source's Forwarder.
func (p *Peers) Forward(partition int32, key, value []byte) bool {
	if p == nil || !kafkalog.IsForward(value) || entrySize(key, value) > maxMessage {
		return false
	}
	node, e, ok := p.dir.lookup(partition)
	if !ok || node == p.cfg.Node {
		return false
	}
	l := p.linkTo(node, e)
	return l != nil && l.forward(partition, key, value)
}

// linkTo returns the link up to node, or nil, opening one in the
// background if none is up or being opened and the node is not down.
func (p *Peers) linkTo(node string, e entry) *link {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if l, ok := p.links[node]; ok {
		if l != nil && l.e.Addr == e.Addr && l.e.FP == e.FP {
			return l
		}
		if l == nil { // being opened
			return nil
		}
		go l.close(ErrLinkDown) // the node published another address
		delete(p.links, node)
	}
	if time.Now().Before(p.down[node]) {
		return nil
	}
	p.links[node] = nil
	go p.open(node, e)
	return nil
}

// open opens a link to node.
func (p *Peers) open(node string, e entry) {
	l, err := p.dial(node, e)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil || p.closed {
		delete(p.links, node)
		p.down[node] = time.Now().Add(retryAfter)
		if err != nil {
			p.cfg.Logger.Info("cluster: no peer link; its commands go through Kafka", "peer", node, "addr", e.Addr, "err", err)
		} else {
			go l.close(ErrLinkDown)
		}
		return
	}
	p.links[node] = l
	go l.run()
	if p.linked != nil {
		p.linked(node)
	}
}

// dial connects to node and opens the link: the owner's first message
// says it took the link, so a refused certificate fails here, before any
// command is queued.
func (p *Peers) dial(node string, e entry) (*link, error) {
	c, err := net.DialTimeout("tcp", e.Addr, handshakeTimeout)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(c, clientTLS(p.cert, e.FP))
	f := newFrames(tc)
	if err = c.SetDeadline(time.Now().Add(handshakeTimeout)); err == nil {
		err = tc.Handshake()
	}
	if err == nil {
		err = f.welcomed()
	}
	if err == nil {
		err = c.SetDeadline(time.Time{})
	}
	if err != nil {
		_ = tc.Close()
		return nil, err
	}
	return &link{p: p, node: node, e: e, f: f, out: newBatcher(), calls: map[string]int{}, inflight: newBudget(p.cfg), done: make(chan struct{})}, nil
}

// link is a front node's link to one owner.
type link struct {
	p    *Peers
	node string
	e    entry
	f    *frames
	out  *batcher
	done chan struct{}

	mu sync.Mutex
	// calls holds the commands in flight on the link, by request id,
	// with their sizes, counted in inflight.
	calls    map[string]int
	inflight budget
	closed   bool
}

// send queues a command; false if the link is closed or full.
func (l *link) send(partition int32, rid string, key, value []byte) bool {
	size := len(key) + len(value)
	l.mu.Lock()
	if _, dup := l.calls[rid]; l.closed || dup || !l.inflight.take(size) {
		l.mu.Unlock()
		return false
	}
	l.calls[rid] = size
	l.mu.Unlock()
	l.out.add(uint64(partition), key, value)
	return true
}

// forward queues a forward or answers; false if the link is closed.
func (l *link) forward(partition int32, key, value []byte) bool {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return false
	}
	l.out.add(uint64(partition), key, value)
	return true
}

// run writes the queued commands and reads the answers until the link
// breaks, then closes it.
func (l *link) run() {
	go func() {
		err := l.out.run(l.done, func(m []byte) error {
			if len(m) > 0 {
				l.p.met.commandMsgs.Inc()
			}
			return l.f.write(m)
		}, pingEvery)
		if err != nil {
			l.close(err)
		}
	}()
	for {
		m, err := l.f.read()
		if err == nil {
			err = eachEntry(m, l.answered)
		}
		if err != nil {
			l.close(err)
			return
		}
	}
}

// answered completes a call with the owner's answer.
func (l *link) answered(kind uint64, rid, value []byte) {
	l.mu.Lock()
	size, ok := l.calls[string(rid)]
	if ok {
		delete(l.calls, string(rid))
		l.inflight.give(size)
	}
	l.mu.Unlock()
	if !ok {
		return
	}
	switch kind {
	case answerReply:
		l.p.met.replies.Inc()
		l.p.recv.Deliver(rid, value)
	case answerKafka:
		l.p.met.viaKafka.Inc()
	default:
		l.p.met.failed.Inc()
		l.p.recv.Fail(rid, errFailed)
	}
}

// close ends the link: each call in flight on it fails with ErrLinkDown,
// and the node sends through Kafka to the peer for a while.
func (l *link) close(err error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	inflight := l.calls
	l.calls = nil
	close(l.done)
	l.mu.Unlock()
	_ = l.f.c.Close()
	p := l.p
	p.mu.Lock()
	if p.links[l.node] == l {
		delete(p.links, l.node)
		p.down[l.node] = time.Now().Add(retryAfter)
	}
	p.mu.Unlock()
	if len(inflight) > 0 {
		p.cfg.Logger.Warn("cluster: peer link broke; failing its calls", "peer", l.node, "calls", len(inflight), "err", err)
	}
	p.met.linkDown.Add(float64(len(inflight)))
	for rid := range inflight {
		p.recv.Fail([]byte(rid), ErrLinkDown)
	}
}
