package peer

import (
	"context"
	"errors"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	grpcpeer "google.golang.org/grpc/peer"

	"github.com/surge-dev/surge/internal/cluster/calls"
)

// inbound is an owner's side of a link a front node opened.
type inbound struct {
	// ids starts the request ids of the front node's commands: its id
	// and "-". A command whose request id is another node's is refused,
	// so that no link can take the answer to another node's call.
	ids string
	out *batcher
	// owed counts the link's commands not answered yet; ended is set
	// once the link ended. Both under Peers.mu.
	owed  budget
	ended bool
}

// serve takes a front node's link: it hands each command to the node's
// Take and writes the answers back, until the link ends. Its client's
// certificate was checked before (serverTLS): an unknown one never gets
// here.
func (p *Peers) serve(ss grpc.ServerStream) error {
	node := p.client(ss.Context())
	if node == "" {
		return errUnknownPeer
	}
	in := &inbound{ids: node + "-", out: newBatcher(), owed: newBudget(p.cfg)}
	if err := ss.SendHeader(nil); err != nil {
		return err
	}
	done := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		wrote <- in.out.run(done, func(m []byte) error {
			p.met.answerMsgs.Inc()
			return ss.SendMsg(&m)
		})
	}()
	read := make(chan error, 1)
	go func() { read <- p.read(ss, in) }()
	defer p.drop(in)
	// Either side's end ends the link: returning cancels the stream,
	// which ends the other.
	select {
	case err := <-wrote:
		return err
	case err := <-read:
		close(done)
		<-wrote
		return err
	}
}

// client is the node whose certificate the link's client showed, as the
// directory knows it now ("" for none).
func (p *Peers) client(ctx context.Context) string {
	pr, ok := grpcpeer.FromContext(ctx)
	if !ok {
		return ""
	}
	info, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return ""
	}
	return p.dir.nodeOf(fingerprint(info.State.PeerCertificates[0].Raw))
}

// read hands the link's commands to received until the link ends.
func (p *Peers) read(ss grpc.ServerStream, in *inbound) error {
	for {
		var m []byte
		err := ss.RecvMsg(&m)
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
// the front node's.
func (p *Peers) received(in *inbound, tag uint64, key, value []byte) {
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
	_, dup := p.owed[rid]
	if dup || !in.owed.take(rid, len(key)+len(value)) {
		p.mu.Unlock()
		in.out.add(answerFailed, []byte(rid), nil)
		return
	}
	p.owed[rid] = in
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
		if o == in {
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
func (p *Peers) Fail(rid string) bool { return p.answer([]byte(rid), answerFailed, nil) }

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
	in, ok := p.owed[string(rid)]
	if ok {
		delete(p.owed, string(rid))
		in.owed.give(rid)
	}
	p.mu.Unlock()
	if ok {
		in.out.add(kind, rid, v)
	}
	return ok
}

// requestID is the request id of a command's key.
func requestID(key []byte) (string, bool) {
	_, rid, ok := calls.ReplyAddress(key)
	return string(rid), ok
}
