// Package calls carries the calls between the nodes of a surge cluster on
// Apache Kafka (docs/CLUSTER.md): a node appends a command to the partition
// that owns its key and waits for the reply, which the partition's owner
// writes to the node's inbox, a partition of the replies topic, once its
// round's write counts. A command's first byte names its workload.
package calls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// Caller sends commands to partitions and waits for their replies in the
// node's inbox. A command's key is "<inbox>:<request id>": the owner
// writes the reply, with the request id (packed: replies.go), to that
// partition of the replies topic once the write of the command's round
// counts, so the reply is read only once the command's effects are
// durable.
type Caller struct {
	prod  appender
	inbox int32
	// prefix starts each of the caller's request ids: the node's id and
	// an incarnation drawn at random when the caller starts, so that a
	// reply to a request of the node's previous run, which an owner may
	// commit after the node restarts, matches no call of this run.
	prefix string
	// address starts each command's key: "<inbox>:" and prefix.
	address string
	seq     atomic.Uint64
	cl      *kgo.Client
	log     *slog.Logger

	// local, if set, takes a command for a partition the node owns, to
	// be applied without Kafka (SetLocal).
	local func(partition int32, key, value []byte) bool

	mu sync.Mutex
	// waiting holds the calls waiting for their answer by their request's
	// sequence number (seqOf), which hashes and compares cheaper than the
	// request id and is kept without a copy of it.
	waiting map[uint64]waiter
	// ticks counts the seconds since the caller started (expire).
	ticks atomic.Int64
	done  chan struct{}
	stop  chan struct{}
	swept chan struct{}
}

// waiter is a call waiting for its answer, until the tick its deadline
// falls in.
type waiter struct {
	ch       chan answer
	deadline int64
}

// answer is what a call gets: its reply, or why it has none.
type answer struct {
	reply []byte
	err   error
}

func New(ctx context.Context, c kafkalog.Config, node string, log *slog.Logger) (*Caller, error) {
	prod, err := kafkalog.NewProducer(c)
	if err != nil {
		return nil, err
	}
	k := newCaller(node, c.InboxPartition(node), log)
	k.prod = prod
	// Read from the inbox's end as of now, fixed before any command leaves:
	// a reply can then never come before the point reading starts.
	from, err := inboxEnd(ctx, c, k.inbox)
	if err == nil {
		// The fetch wait is kgo's default (5 s): a read_committed fetch
		// returns as soon as a reply is committed, so the wait only sets
		// how often an idle inbox asks again.
		k.cl, err = kgo.NewClient(append(c.SeedsFor("inbox"),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.RepliesTopic(): {k.inbox: kgo.NewOffset().At(from)}}),
		)...)
	}
	if err != nil {
		prod.Close()
		return nil, fmt.Errorf("calls: inbox: %w", err)
	}
	go k.read()
	go k.expire()
	return k, nil
}

// appender appends a command to a partition of the commands topic
// (kafkalog.Producer).
type appender interface {
	Append(ctx context.Context, partition int32, key, value []byte) (int64, error)
	Close()
}

// newCaller is a caller of node with inbox, its producer and its inbox's
// reader not set.
func newCaller(node string, inbox int32, log *slog.Logger) *Caller {
	prefix := node + "-" + strconv.FormatUint(rand.Uint64()>>24, 36) + "."
	return &Caller{
		prefix: prefix, address: strconv.Itoa(int(inbox)) + ":" + prefix,
		inbox: inbox, log: log, waiting: map[uint64]waiter{},
		done: make(chan struct{}), stop: make(chan struct{}), swept: make(chan struct{}),
	}
}

// inboxEnd returns the end offset of the node's inbox, asking again for a
// while if the brokers do not know the topic's partitions yet (just after
// it was created).
func inboxEnd(ctx context.Context, c kafkalog.Config, inbox int32) (int64, error) {
	cl, err := kgo.NewClient(c.Seeds()...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for try := 1; ; try++ {
		ends, err := adm.ListEndOffsets(ctx, c.RepliesTopic())
		if err == nil {
			o, ok := ends.Lookup(c.RepliesTopic(), inbox)
			switch {
			case !ok:
				err = fmt.Errorf("end of %s/%d: no such partition yet", c.RepliesTopic(), inbox)
			case o.Err != nil:
				err = fmt.Errorf("end of %s/%d: %w", c.RepliesTopic(), inbox, o.Err)
			default:
				return o.Offset, nil
			}
		}
		if try == 30 {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(time.Second):
		}
	}
}

// SetLocal has the caller hand each command that local takes to it rather
// than append it to the commands topic; the reply, or the call's failure,
// then comes through Deliver or Fail. Set before the first Call.
func (k *Caller) SetLocal(local func(partition int32, key, value []byte) bool) {
	k.local = local
}

// Effect is what a command may do to its partition's state.
type Effect uint8

const (
	// Writes: the command may change state, so a call lost on its way to
	// the owner fails, since the owner may have applied it.
	Writes Effect = iota
	// ReadsOnly: the command changes nothing, so a call lost on its way to
	// the owner (ErrLost) is sent again through the commands topic, for
	// whichever node owns the partition then.
	ReadsOnly
)

// EffectOf is ReadsOnly for a command that changes nothing, else Writes.
func EffectOf(readOnly bool) Effect {
	if readOnly {
		return ReadsOnly
	}
	return Writes
}

// ErrLost is wrapped by the errors that fail a call whose command or
// answer was lost between the nodes: the owner may or may not have
// applied it.
var ErrLost = errors.New("cluster: the command or its answer was lost between nodes")

// Call sends value to partition, appended to the commands topic unless the
// node takes it locally (SetLocal), and returns the reply. A call not
// answered within Timeout (to the second) fails with
// context.DeadlineExceeded.
//
// The deadline is not a context.WithTimeout of ctx, nor a timer: ctx is
// mostly a fasthttp.RequestCtx, and a context derived from one that is not
// the standard library's starts a goroutine per call to watch it (docs/
// BENCHMARKS.md, "A node's own CPU per transfer"); a timer per
// call costs its start, its stop and a third channel in the wait's select.
// The caller's expire ends the calls past their deadline instead.
func (k *Caller) Call(ctx context.Context, partition int, value []byte, effect Effect) ([]byte, error) {
	deadline := k.ticks.Load() + int64(Timeout/time.Second)
	seq := k.seq.Add(1)
	key := k.key(seq)
	ch := make(chan answer, 1)
	k.mu.Lock()
	k.waiting[seq] = waiter{ch: ch, deadline: deadline}
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		delete(k.waiting, seq)
		k.mu.Unlock()
	}()
	if k.local == nil || !k.local(int32(partition), key, value) {
		if err := k.append(ctx, int32(partition), key, value); err != nil {
			return nil, err
		}
	}
	for {
		select {
		case a := <-ch:
			if a.err == nil || effect != ReadsOnly || !errors.Is(a.err, ErrLost) {
				return a.reply, a.err
			}
			if err := k.append(ctx, int32(partition), key, value); err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// key is the key of the caller's request seq: its address, then seq.
func (k *Caller) key(seq uint64) []byte {
	return strconv.AppendUint(append(make([]byte, 0, len(k.address)+13), k.address...), seq, 36)
}

// seqOf returns the sequence number of rid, a request id key gave, or
// false for any other: another node's, one of the node's previous runs or
// one key never writes (upper case, leading zeros, overflow), so that
// exactly the ids key gives name a call.
func (k *Caller) seqOf(rid []byte) (uint64, bool) {
	if !k.Mine(rid) {
		return 0, false
	}
	digits := rid[len(k.prefix):]
	if digits[0] == '0' {
		return 0, false // sequence numbers start at 1
	}
	var seq uint64
	for _, c := range digits {
		var d uint64
		switch {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'z':
			d = uint64(c-'a') + 10
		default:
			return 0, false
		}
		if seq > (math.MaxUint64-d)/36 {
			return 0, false
		}
		seq = seq*36 + d
	}
	return seq, true
}

// append appends a call's command to the commands topic, within Timeout.
func (k *Caller) append(ctx context.Context, partition int32, key, value []byte) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	_, err := k.prod.Append(ctx, partition, key, value)
	return err
}

// expire ends, once a second, the calls whose deadline passed, until
// Close.
func (k *Caller) expire() {
	defer close(k.swept)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
			k.tick()
		}
	}
}

// tick counts a second and fails the calls whose deadline it passes.
func (k *Caller) tick() {
	now := k.ticks.Add(1)
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range k.waiting {
		if w.deadline < now {
			sendAnswer(w.ch, answer{err: context.DeadlineExceeded})
		}
	}
}

// Send appends a command taken locally but not applied (its partition
// moved) to the commands topic, for the partition's owner now.
func (k *Caller) Send(partition int32, key, value []byte) error {
	return k.append(context.Background(), partition, key, value)
}

// Mine reports whether rid is a request of this caller's, not of another
// node's nor of the node's previous runs (a nil caller, a node's in tests,
// has none).
func (k *Caller) Mine(rid []byte) bool {
	return k != nil && len(rid) > len(k.prefix) && string(rid[:len(k.prefix)]) == k.prefix
}

// Command returns a command of workload with nothing encoded yet: its
// workload's byte, with room for the encoding of a few ids and amounts
// after it, so that a command is encoded into the buffer it is sent in.
func Command(workload byte) []byte {
	return append(make([]byte, 0, 128), workload)
}

// CallWith sends cmd, a command after its workload's byte (Command), to
// partition and decodes the reply with decode. A call not answered within
// Timeout is ErrUnavailable.
func (k *Caller) CallWith(ctx context.Context, partition int, cmd []byte, effect Effect, decode func([]byte) error) error {
	b, err := k.Call(ctx, partition, cmd, effect)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := decode(b); err != nil {
		return fmt.Errorf("cluster: decoding a reply: %w", err)
	}
	return nil
}

// read hands the inbox's replies to their callers until close.
func (k *Caller) read() {
	defer close(k.done)
	for {
		fetches := k.cl.PollFetches(context.Background())
		if fetches.IsClientClosed() {
			return
		}
		fetches.EachError(func(t string, p int32, err error) {
			k.log.Warn("cluster: reading the inbox", "topic", t, "partition", p, "err", err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if err := UnpackReplies(r.Value, k.Deliver); err != nil {
				k.log.Warn("cluster: reading the inbox", "partition", r.Partition, "offset", r.Offset, "err", err)
			}
		})
	}
}

// Deliver hands reply to the call waiting for request rid, if any; an
// empty reply (Refusal) fails the call with ErrOverloaded. The request id
// is bytes, as the replies and the peer links carry it: looking it up
// copies nothing.
func (k *Caller) Deliver(rid, reply []byte) {
	if len(reply) == 0 {
		k.answer(rid, answer{err: ErrOverloaded})
		return
	}
	k.answer(rid, answer{reply: reply})
}

// Fail ends the call waiting for request rid, if any, with err: its
// command was not applied, or was applied by a round that did not commit.
func (k *Caller) Fail(rid []byte, err error) { k.answer(rid, answer{err: err}) }

func (k *Caller) answer(rid []byte, a answer) {
	seq, ok := k.seqOf(rid)
	if !ok {
		return
	}
	k.mu.Lock()
	w, ok := k.waiting[seq]
	k.mu.Unlock()
	if ok {
		sendAnswer(w.ch, a)
	}
}

// sendAnswer hands a to the call waiting on ch, unless it has one already:
// a second answer to one request (not sent by committed rounds), or one
// that came as the call expired.
func sendAnswer(ch chan answer, a answer) {
	select {
	case ch <- a:
	default:
	}
}

// Close stops reading the inbox and closes the producer.
func (k *Caller) Close() {
	close(k.stop)
	k.cl.Close()
	<-k.done
	<-k.swept
	k.prod.Close()
}
