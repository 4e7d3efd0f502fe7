package node

import (
	"errors"
	"slices"
	"sync"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A request the node takes for a partition its member writes does not go
// through Kafka: the node hands the command to its owner's next round
// (takeLocal), which applies it with the commands it polls, through the
// same decoding and the same engine, and writes its changelog records and
// the forwards it owes with the partition's batch; the caller is answered
// once that write counts, as for a command read from the commands topic.
// Such a command has no offset: the partition's trailer restates the
// position its last command read left.
//
// A command whose partition the member no longer writes (it moved since
// the command was taken) is appended to the commands topic instead, for
// its owner now, never applied here; so are, at once, the commands queued
// for partitions the member gives up (Node.revoked). After the round
// (localRound.settle), by what became of its partition's write: a command
// of a write that counted is answered; of a fenced one (which never
// counts) it is handed on, to the queue's front or to the commands topic
// if the member no longer writes its partition; of one of unknown outcome
// it fails (errUnknownOutcome), for the client to retry (with its
// idempotency id where the operation has one), since it may have counted.
// A command the round did not apply (its partition not taken when the
// round began, or the round ended before it applied) is handed on in the
// same way; one the round refused because its partition owes another
// too much is answered as overloaded (refuse).

// errUnknownOutcome fails the calls of local commands whose write's
// outcome is unknown.
var errUnknownOutcome = errors.New("node: the outcome of the round applying the command is unknown")

// errClosed fails the calls of the node's own local commands left when
// it stops (those of peers go on to the commands topic: handOff).
var errClosed = errors.New("node: stopped")

// forwardsBound is how many rounds' batches (Config.MaxBatch) of
// forwards and answers the local queue may hold when it takes one from a
// peer: enough to fill the next rounds while their sources keep sending,
// and a bound on what a peer's flood costs, since forwards take no part of
// a link's budget. The node's own count towards it but are never refused
// (Limits bound what a source owes). A peer's one past it is dropped; its
// source's Forwarder sends it again.
const forwardsBound = 4

// localQueue holds the commands taken locally until a round takes them.
type localQueue struct {
	mu   sync.Mutex
	cmds []kafkalog.Command
	// forwards is how many of cmds are forwards or answers
	// (kafkalog.IsForward), at most maxForwards as addForward takes them.
	forwards, maxForwards int
	// last is how many commands the last take took: the queue's next
	// array, made when the first command after it comes, holds as many
	// without growing (a round keeps the array it took).
	last   int
	closed bool
	wake   chan struct{}
}

// newLocalQueue returns a queue holding up to maxForwards forwards and
// answers.
func newLocalQueue(maxForwards int) *localQueue {
	return &localQueue{maxForwards: maxForwards, wake: make(chan struct{}, 1)}
}

// add queues c after the others; false if the queue is closed.
func (q *localQueue) add(c kafkalog.Command) bool {
	return q.addUnless(c, false)
}

// addForward queues c, a forward or answers, after the others; false if
// the queue is closed or holds its bound of them.
func (q *localQueue) addForward(c kafkalog.Command) bool {
	return q.addUnless(c, true)
}

// addUnless queues c after the others; false if the queue is closed, or,
// if bounded, holds its bound of forwards.
func (q *localQueue) addUnless(c kafkalog.Command, bounded bool) bool {
	q.mu.Lock()
	if q.closed || bounded && q.forwards >= q.maxForwards {
		q.mu.Unlock()
		return false
	}
	q.forwards += forwardsIn([]kafkalog.Command{c})
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
	q.forwards += forwardsIn(cmds)
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
	q.forwards -= forwardsIn(taken)
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
	q.forwards -= forwardsIn(of)
	return of
}

// close refuses further commands and returns those queued.
func (q *localQueue) close() []kafkalog.Command {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	cmds := q.cmds
	q.cmds, q.forwards = nil, 0
	return cmds
}

// forwardsIn counts the forwards and answers among cmds.
func forwardsIn(cmds []kafkalog.Command) int {
	n := 0
	for _, c := range cmds {
		if kafkalog.IsForward(c.Value) {
			n++
		}
	}
	return n
}

// route is the caller's Local: it queues a command for partition p for
// the owner's rounds if the member writes p, or sends it to p's owner
// over a peer link (owner_peer.go) if one is up.
func (n *Node) route(p int32, key, value []byte) bool {
	if n.writes(p) && n.local.add(kafkalog.Command{Partition: p, Offset: -1, Key: key, Value: value}) {
		return true
	}
	return n.peers.Send(p, key, value)
}

// localRound is one round's kafkalog.Local over the node's queue: it
// takes the commands of partitions the member writes and appends the
// others to the commands topic.
type localRound struct {
	n     *Node
	taken []kafkalog.Command
}

// Waiting implements kafkalog.Local.
func (r *localRound) Waiting() <-chan struct{} { return r.n.local.wake }

// Take implements kafkalog.Local.
func (r *localRound) Take(max int) []kafkalog.Command {
	kept := r.n.keepOrForward(r.n.local.take(max))
	r.taken = append(r.taken, kept...)
	return kept
}

// settle ends the round's local commands by what became of their
// partitions' writes (results): refused commands, local or read from
// the commands topic, are answered as overloaded (refuse); those of a
// write that counted are answered (their held replies went out with the
// partition's replies; a peer's whose reply a later round or another
// partition gives comes through the inbox, and the front node is told
// so); those of a fenced write, of a partition not taken when the round
// began (untaken) or not applied at all are handed on; those of a write
// of unknown outcome fail.
func (r *localRound) settle(results map[int32]kafkalog.Result, untaken, refused []kafkalog.Command) {
	skip := r.n.refuse(results, refused)
	if len(r.taken) == 0 {
		return
	}
	notTaken := map[int32]bool{}
	for _, c := range untaken {
		notTaken[c.Partition] = true
	}
	var again, unknown []kafkalog.Command
	for _, c := range r.taken {
		_, rid, ok := calls.ReplyAddress(c.Key)
		if ok && skip[string(rid)] {
			continue
		}
		res, applied := results[c.Partition]
		switch {
		case notTaken[c.Partition] || !applied || res == kafkalog.Fenced:
			again = append(again, c)
		case res == kafkalog.Unknown:
			unknown = append(unknown, c)
		case ok && !r.n.caller.Mine(rid):
			r.n.peers.Kafka(rid)
		}
	}
	r.n.requeue(again)
	r.n.fail(unknown, errUnknownOutcome)
}

// refuse answers the round's refused commands (kafkalog.ChainRound.Refused),
// whichever node's requests they are, with a Refusal, which goes the way
// their replies would (deliver) and fails their calls with
// calls.ErrOverloaded, and returns the request ids it answered. One read
// from the commands topic is answered only once its partition's write
// counts: after a write that does not count it is read again, and may be
// applied.
func (n *Node) refuse(results map[int32]kafkalog.Result, refused []kafkalog.Command) map[string]bool {
	if len(refused) == 0 {
		return nil
	}
	answered := map[string]bool{}
	var outs []kafkalog.Output
	for _, c := range refused {
		inbox, rid, ok := calls.ReplyAddress(c.Key)
		res, known := results[c.Partition]
		if !ok || (c.Offset >= 0 && (!known || res != kafkalog.Counted)) {
			continue
		}
		answered[string(rid)] = true
		outs = append(outs, calls.Refusal(inbox, rid))
	}
	n.deliver(outs)
	return answered
}

// requeue puts commands no write counted for back at the queue's front,
// for the next round, but for those of partitions the member no longer
// writes (they moved while the round ran), which go on to the commands
// topic for their owner now.
func (n *Node) requeue(cmds []kafkalog.Command) {
	if kept := n.keepOrForward(cmds); len(kept) > 0 {
		n.local.addFront(kept)
	}
}

// keepOrForward returns, in cmds' array, the commands of partitions the
// member writes; the others go on to the commands topic, for their owner
// now.
func (n *Node) keepOrForward(cmds []kafkalog.Command) []kafkalog.Command {
	kept := cmds[:0]
	for _, c := range cmds {
		if n.writes(c.Partition) {
			kept = append(kept, c)
			continue
		}
		n.goForward(c)
	}
	return kept
}

// holds reports whether the reply to request rid is handed over by the
// node once its write counts (deliver): the node's own requests, and
// those a peer sent over a link still up.
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
