package node

import (
	"errors"
	"slices"
	"sync"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A request the node takes for a partition its member owns does not go
// through Kafka: the node hands the command to its owner's next round
// (takeLocal), which applies it with the commands it polls, through the
// same decoding and the same engine, and commits its changelog records,
// forwards and reply in the round's transaction; the caller is answered
// once that committed, as for a command read from the commands topic. Such
// a command has no offset: the member fences the round with a commit of
// its partition's offset as it stands (kafkalog.Member.Takes).
//
// A command whose partition the state a round applies to does not own, or
// the member no longer takes local commands for (it moved since the
// command was taken), is appended to the commands topic instead, for its
// owner now, never applied here; so are, at once, the commands queued for
// partitions the member gives up (Node.revoked). A command of a round
// that did not commit is never acknowledged: taken again by the next round
// when the round surely did not commit (kafkalog.RoundResult.Aborted, as
// is a round that never applied its commands), on the state the node
// rebuilt if the round changed any; failed when the round's outcome is
// unknown (an error ending its commit), for the client to retry.

// errNotCommitted fails the calls of local commands whose round did not
// commit.
var errNotCommitted = errors.New("node: the round applying the command did not commit")

// errClosed fails the calls of the node's own local commands left when
// it stops (those of peers go on to the commands topic: handOff).
var errClosed = errors.New("node: stopped")

// localQueue holds the commands taken locally until a round takes them.
type localQueue struct {
	mu   sync.Mutex
	cmds []kafkalog.Command
	// last is how many commands the last take took: the queue's next
	// array, made when the first command after it comes, holds as many
	// without growing (a round keeps the array it took).
	last   int
	closed bool
	wake   chan struct{}
}

func newLocalQueue() *localQueue { return &localQueue{wake: make(chan struct{}, 1)} }

// add queues c after the others; false if the queue is closed.
func (q *localQueue) add(c kafkalog.Command) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	if q.cmds == nil {
		q.cmds = make([]kafkalog.Command, 0, max(q.last, 16))
	}
	q.cmds = append(q.cmds, c)
	q.mu.Unlock()
	q.poke()
	return true
}

// addFront queues cmds before the others; false if the queue is closed.
func (q *localQueue) addFront(cmds []kafkalog.Command) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.cmds = append(cmds[:len(cmds):len(cmds)], q.cmds...)
	q.mu.Unlock()
	q.poke()
	return true
}

// poke wakes the round waiting for commands, if any.
func (q *localQueue) poke() {
	select {
	case q.wake <- struct{}{}:
	default: // woken already
	}
}

// take returns up to max of the queued commands.
func (q *localQueue) take(max int) []kafkalog.Command {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(max, len(q.cmds))
	taken := q.cmds[:n:n]
	q.cmds = q.cmds[n:]
	if len(q.cmds) == 0 && n > 0 {
		q.cmds, q.last = nil, n
	}
	return taken
}

// takeOf removes and returns the queued commands of partitions ps.
func (q *localQueue) takeOf(ps []int32) []kafkalog.Command {
	q.mu.Lock()
	defer q.mu.Unlock()
	var of []kafkalog.Command
	kept := make([]kafkalog.Command, 0, len(q.cmds))
	for _, c := range q.cmds {
		if slices.Contains(ps, c.Partition) {
			of = append(of, c)
		} else {
			kept = append(kept, c)
		}
	}
	q.cmds = kept
	return of
}

// close refuses further commands and returns those queued.
func (q *localQueue) close() []kafkalog.Command {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	cmds := q.cmds
	q.cmds = nil
	return cmds
}

// route is the caller's Local: it queues a command for partition p for
// the owner's rounds if the member takes local commands for p, or sends
// it to p's owner over a peer link (owner_peer.go) if one is up.
func (n *Node) route(p int32, key, value []byte) bool {
	if n.member.Takes(p) && n.local.add(kafkalog.Command{Partition: p, Offset: -1, Key: key, Value: value}) {
		return true
	}
	return n.peers.Send(p, key, value)
}

// localRound is one round's kafkalog.Local over the node's queue: it
// takes the commands of partitions st owns and appends the others to the
// commands topic.
type localRound struct {
	n     *Node
	st    *state
	taken []kafkalog.Command
}

// Waiting implements kafkalog.Local.
func (r *localRound) Waiting() <-chan struct{} { return r.n.local.wake }

// Take implements kafkalog.Local.
func (r *localRound) Take(max int) []kafkalog.Command {
	kept := r.n.keepOrForward(r.n.local.take(max), func(p int32) bool { return r.st.owned[p] })
	r.taken = append(r.taken, kept...)
	return kept
}

// settle ends the round's local commands: those of a committed round are
// answered with its held replies, the node's own by its caller, a peer's
// on its link (those a later round or another partition's owner gives
// come through the inbox); those of a round that surely did not commit
// (void) go back to the queue's front; the others are failed.
func (r *localRound) settle(committed, void bool) {
	switch {
	case committed:
		for _, o := range r.st.held {
			if r.n.caller.Mine(o.Key) || !r.n.peers.Reply(o.Key, o.Value) {
				r.n.caller.Deliver(o.Key, o.Value)
			}
		}
		r.st.held = nil
		for _, c := range r.taken {
			if _, rid, ok := calls.ReplyAddress(c.Key); ok && !r.n.caller.Mine(rid) {
				r.n.peers.Kafka(rid)
			}
		}
	case len(r.taken) == 0:
	case void:
		r.n.requeue(r.taken)
	default:
		r.n.fail(r.taken, errNotCommitted)
	}
}

// requeue puts the commands of a round that surely did not commit back
// at the queue's front, for the next round, but for those of partitions
// the member no longer takes local commands for (they moved while the
// round ran), which go on to the commands topic for their owner now.
func (n *Node) requeue(cmds []kafkalog.Command) {
	if kept := n.keepOrForward(cmds, func(int32) bool { return true }); len(kept) > 0 {
		n.local.addFront(kept)
	}
}

// keepOrForward returns, in cmds' array, the commands of partitions the
// member takes local commands for and owned approves; the others go on
// to the commands topic, for their owner now.
func (n *Node) keepOrForward(cmds []kafkalog.Command, owned func(int32) bool) []kafkalog.Command {
	kept := cmds[:0]
	for _, c := range cmds {
		if owned(c.Partition) && n.member.Takes(c.Partition) {
			kept = append(kept, c)
			continue
		}
		n.goForward(c)
	}
	return kept
}

// holds reports whether the reply to request rid is held until its round
// commits, to be handed over by the node (settle): the node's own
// requests, and those a peer sent over a link still up.
func (n *Node) holds(rid []byte) bool { return n.caller.Mine(rid) || n.peers.Owes(rid) }

// forward appends a command the node took but does not apply to the
// commands topic, for its partition's owner, whose reply reaches the
// caller through its inbox.
func (n *Node) forward(c kafkalog.Command) {
	_, rid, ok := calls.ReplyAddress(c.Key)
	err := n.caller.Send(c.Partition, c.Key, c.Value)
	switch {
	case !ok:
	case err != nil:
		n.failCall(rid, err)
	default:
		n.peers.Kafka(rid)
	}
}

// goForward forwards c in the background; once the node is closing, it
// fails c's call instead.
func (n *Node) goForward(c kafkalog.Command) {
	if !n.forwards.start(func() { n.forward(c) }) {
		n.fail([]kafkalog.Command{c}, errClosed)
	}
}

// handOff ends the local commands no round took when the node stops:
// those a peer sent, never applied, go on to the commands topic, for the
// partition's next owner to answer through the front node's inbox; the
// node's own calls fail, as the node stops reading its inbox.
func (n *Node) handOff(cmds []kafkalog.Command) {
	for _, c := range cmds {
		if _, rid, ok := calls.ReplyAddress(c.Key); ok && n.peers.Owes(rid) {
			n.goForward(c)
			continue
		}
		n.fail([]kafkalog.Command{c}, errClosed)
	}
}

// forwards tracks the node's forwards in flight, so that the node stops
// only once they ended and their front nodes were told.
type forwards struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	closing bool
}

// start runs fn in the background; false once wait began.
func (f *forwards) start(fn func()) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		return false
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		fn()
	}()
	return true
}

// wait refuses further forwards and waits for those in flight.
func (f *forwards) wait() {
	f.mu.Lock()
	f.closing = true
	f.mu.Unlock()
	f.wg.Wait()
}

// fail fails the calls waiting for cmds.
func (n *Node) fail(cmds []kafkalog.Command, err error) {
	for _, c := range cmds {
		if _, rid, ok := calls.ReplyAddress(c.Key); ok {
			n.failCall(rid, err)
		}
	}
}

// failCall fails the call waiting for request rid: on its peer link if it
// came over one, else the node's own.
func (n *Node) failCall(rid []byte, err error) {
	if !n.peers.Fail(rid) {
		n.caller.Fail(rid, err)
	}
}
