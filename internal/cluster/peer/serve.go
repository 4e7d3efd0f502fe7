package peer

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// inbound is an owner's side of a link a front node opened.
type inbound struct {
	// ids starts the request ids of the front node's commands: its id
	// and "-". A command whose request id is another node's is refused,
	// so that no link can take the answer to another node's call.
	ids string
	out *batcher
	// owed counts the link's commands not answered yet (Peers.owed
	// holds them); ended is set once the link ended. Both under Peers.mu.
	owed  budget
	ended bool
}

// owed is a command taken from a link and not answered yet: the link its
// answer goes back on, and its size in that link's budget.
type owed struct {
	in   *inbound
	size int
}

// accept takes the connections to the peer port until it closes.
func (p *Peers) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // out of descriptors, say: the next may do
			p.cfg.Logger.Warn("cluster: accepting a peer connection", "err", err)
			time.Sleep(acceptRetry)
			continue
		}
		if !p.served.take(c, p.link) {
			_ = c.Close()
		}
	}
}

// acceptRetry is how long the peer port waits after a failed accept.
const acceptRetry = 50 * time.Millisecond

// link takes a connection a front node opened: the TLS handshake, in
// which a client whose certificate no node published is refused, within
// handshakeTimeout, then the link, until it ends.
func (p *Peers) link(c net.Conn) {
	tc := tls.Server(c, p.tls)
	defer tc.Close()
	if err := c.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil || tc.Handshake() != nil {
		return
	}
	node := p.client(tc.ConnectionState())
	f := newFrames(tc)
	if node == "" || f.write(nil) != nil || c.SetDeadline(time.Time{}) != nil {
		return
	}
	_ = p.serve(f, node)
}

// serve takes a front node's link: it hands each command to the node's
// Take and writes the answers back, until the link ends. Its client's
// certificate was checked before (serverTLS): an unknown one never gets
// here.
func (p *Peers) serve(f *frames, node string) error {
	in := &inbound{ids: node + "-", out: newBatcher(), owed: newBudget(p.cfg)}
	done := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		wrote <- in.out.run(done, func(m []byte) error {
			if len(m) > 0 {
				p.met.answerMsgs.Inc()
			}
			return f.write(m)
		}, pingEvery)
	}()
	read := make(chan error, 1)
	go func() { read <- p.read(f, in) }()
	defer p.drop(in)
	// Either side's end ends the link: closing the connection ends the
	// other, a write it holds up included.
	defer f.c.Close()
	select {
	case err := <-wrote:
		return err
	case err := <-read:
		_ = f.c.Close()
		close(done)
		<-wrote
		return err
	}
}

// client is the node whose certificate the link's client showed, as the
// directory knows it now ("" for none).
func (p *Peers) client(st tls.ConnectionState) string {
	if len(st.PeerCertificates) == 0 {
		return ""
	}
	return p.dir.nodeOf(fingerprint(st.PeerCertificates[0].Raw))
}

// read hands the link's commands to received until the link ends.
func (p *Peers) read(f *frames, in *inbound) error {
	for {
		m, err := f.read()
		if err == nil {
			err = eachEntry(m, func(tag uint64, key, value []byte) { p.received(in, tag, key, value) })
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// received takes one command of a link: the node's Take has it, unless
// the link carries its budget of commands or bytes already or the request is not
// the front node's. A forward or answers (Forward) the Take has as they
// come, or drops (the source sends it again).
func (p *Peers) received(in *inbound, tag uint64, key, value []byte) {
	if kafkalog.IsForward(value) { // no call waits for it: nothing owed, nothing answered
		if tag <= 1<<31-1 && !p.take(int32(tag), key, value) {
			p.met.forwardsDropped.Inc()
		}
		return
	}
	rid, ok := requestID(key)
	if !ok || tag > 1<<31-1 {
		return
	}
	if !strings.HasPrefix(rid, in.ids) {
		in.out.add(answerFailed, []byte(rid), nil)
		return
	}
	p.mu.Lock()
	if in.ended {
		p.mu.Unlock()
		return
	}
	size := len(key) + len(value)
	if _, dup := p.owed[rid]; dup || !in.owed.take(size) {
		p.mu.Unlock()
		in.out.add(answerFailed, []byte(rid), nil)
		return
	}
	p.owed[rid] = owed{in: in, size: size}
	p.mu.Unlock()
	p.met.taken.Inc()
	p.take(int32(tag), key, value)
}

// drop forgets the commands of a link that ended: their answers have no
// way back.
func (p *Peers) drop(in *inbound) {
	p.mu.Lock()
	defer p.mu.Unlock()
	in.ended = true
	for rid, o := range p.owed {
		if o.in == in {
			delete(p.owed, rid)
		}
	}
}

// Owes reports whether request rid came over a link still up, so that its
// reply goes back on it.
func (p *Peers) Owes(rid []byte) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	_, ok := p.owed[string(rid)]
	p.mu.Unlock()
	return ok
}

// Reply sends the reply to request rid, from a committed round, back on
// its link; false if rid did not come over one still up.
func (p *Peers) Reply(rid, reply []byte) bool { return p.answer(rid, answerReply, reply) }

// Fail fails request rid on its link; false if rid did not come over one
// still up.
func (p *Peers) Fail(rid []byte) bool { return p.answer(rid, answerFailed, nil) }

// Kafka tells the front node of request rid that the reply comes through
// its inbox.
func (p *Peers) Kafka(rid []byte) { p.answer(rid, answerKafka, nil) }

// answer sends an answer of kind to request rid back on its link. Request
// ids are bytes here, as the rounds hold them, since looking one up copies
// nothing where a string of it would.
func (p *Peers) answer(rid []byte, kind uint64, v []byte) bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	o, ok := p.owed[string(rid)]
	if ok {
		delete(p.owed, string(rid))
		o.in.owed.give(o.size)
	}
	p.mu.Unlock()
	if ok {
		o.in.out.add(kind, rid, v)
	}
	return ok
}

// requestID is the request id of a command's key.
func requestID(key []byte) (string, bool) {
	_, rid, ok := calls.ReplyAddress(key)
	return string(rid), ok
}

// served is the owner's side of the links: the connections open, closed
// when the node stops, and the goroutines serving them, waited for.
type served struct {
	mu     sync.Mutex
	open   map[net.Conn]struct{}
	wg     sync.WaitGroup
	closed bool
}

// take serves c with fn in the background, counting it open until fn
// returns; false once stop began.
func (s *served) take(c net.Conn, fn func(net.Conn)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.open == nil {
		s.open = map[net.Conn]struct{}{}
	}
	s.open[c] = struct{}{}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(c)
		s.mu.Lock()
		delete(s.open, c)
		s.mu.Unlock()
	}()
	return true
}

// stop closes the connections open and waits for their goroutines.
func (s *served) stop() {
	s.mu.Lock()
	s.closed = true
	open := s.open
	s.open = nil
	s.mu.Unlock()
	for c := range open {
		_ = c.Close()
	}
	s.wg.Wait()
}
