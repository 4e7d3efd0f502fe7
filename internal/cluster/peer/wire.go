package peer

import (
	"encoding/binary"
	"errors"
	"runtime"
	"sync"

	"google.golang.org/grpc/mem"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A message on a link is a batch of entries packed as the records of
// the commands topic pack theirs (kafkalog.AppendEntry), each entry's
// value prefixed with a tag (uvarint). A command's tag is its partition,
// its key the command's key ("<inbox>:<request id>") and the rest of its
// value the command. An answer's tag is its kind (answer*), its key the
// request id and the rest of its value the reply.

// The kinds of answer an owner sends back for a command.
const (
	// answerReply carries the reply of a committed round.
	answerReply uint64 = iota
	// answerFailed: the command's outcome is unknown, or it was refused.
	answerFailed
	// answerKafka: the reply comes through the front node's inbox (the
	// command went on to the commands topic, or a later round replies).
	answerKafka
)

// packLimit bounds a message's entries; a larger entry travels alone.
const packLimit = 512 << 10

// errBadMessage reports a message that does not parse.
var errBadMessage = errors.New("peer: malformed message")

// appendEntry appends one entry to a message; scratch is a buffer to
// reuse, returned with the entry's tagged value.
func appendEntry(dst, scratch []byte, tag uint64, key, value []byte) ([]byte, []byte) {
	scratch = append(binary.AppendUvarint(scratch[:0], tag), value...)
	return kafkalog.AppendEntry(dst, key, scratch), scratch
}

// entrySize is the most bytes appendEntry adds.
func entrySize(key, value []byte) int {
	return binary.MaxVarintLen64 + kafkalog.EntrySize(key, value)
}

// eachEntry calls fn with each entry of message m, in order; key and value
// alias m.
func eachEntry(m []byte, fn func(tag uint64, key, value []byte)) error {
	bad := false
	err := kafkalog.Unpack(m, func(key, v []byte) {
		tag, n := binary.Uvarint(v)
		if n <= 0 || bad {
			bad = true
			return
		}
		fn(tag, key, v[n:])
	})
	if err != nil || bad {
		return errBadMessage
	}
	return nil
}

// batcher packs the entries queued on a link into messages: its writer
// sends, in one message, every entry queued since its previous send, so
// that the entries queued while a message is out share the next one.
type batcher struct {
	mu      sync.Mutex
	scratch []byte
	cur     []byte
	full    [][]byte
	wake    chan struct{}
}

func newBatcher() *batcher { return &batcher{wake: make(chan struct{}, 1)} }

// add queues an entry.
func (b *batcher) add(tag uint64, key, value []byte) {
	size := entrySize(key, value)
	b.mu.Lock()
	if len(b.cur) > 0 && len(b.cur)+size > packLimit {
		b.full = append(b.full, b.cur)
		b.cur = nil
	}
	if b.cur == nil {
		// Sized for a few entries: under load a link sends a message
		// every few commands, and gRPC holds each until written, so a
		// message's buffer is not reused.
		b.cur = make([]byte, 0, max(1<<10, size))
	}
	b.cur, b.scratch = appendEntry(b.cur, b.scratch, tag, key, value)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default: // woken already
	}
}

// take returns the messages queued, the open one last.
func (b *batcher) take() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	msgs := b.full
	if len(b.cur) > 0 {
		msgs = append(msgs, b.cur)
	}
	b.full, b.cur = nil, nil
	return msgs
}

// run sends the queued messages with send until done closes or a send
// fails.
func (b *batcher) run(done <-chan struct{}, send func([]byte) error) error {
	for {
		select {
		case <-b.wake:
		case <-done:
			return nil
		}
		// The goroutine that woke the writer has usually just queued the
		// one entry; yielding once lets the goroutines runnable now (other
		// requests' handlers, a round settling) queue theirs, which then
		// share the message. A message costs a write, a TLS record and
		// the peer's read and wake-ups, whatever its entries.
		runtime.Gosched()
		for _, m := range b.take() {
			if err := send(m); err != nil {
				return err
			}
		}
	}
}

// codec is the links' gRPC codec: a message is its bytes. It is a
// CodecV2 so that a message received is copied once, out of gRPC's
// buffers (Materialize), where a Codec's Unmarshal gets a copy already
// and would have to copy it again, since gRPC reuses it.
type codec struct{}

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

// Unmarshal copies data, which gRPC frees once it returns.
func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (codec) Name() string { return "surge-peer" }
