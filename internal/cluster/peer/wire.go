package peer

import (
	"encoding/binary"
	"errors"
	"sync"
)

// A message on a link is a batch of entries, each a tag, a key and a
// value: tag, then the key's and the value's lengths each before its
// bytes, all lengths uvarints. A command's tag is its partition, its key
// the command's key ("<inbox>:<request id>") and its value the command.
// An answer's tag is its kind (answer*), its key the request id and its
// value the reply.

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

// appendEntry appends one entry to a message.
func appendEntry(dst []byte, tag uint64, key, value []byte) []byte {
	dst = binary.AppendUvarint(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(len(value)))
	return append(dst, value...)
}

// entrySize is the most bytes appendEntry adds.
func entrySize(key, value []byte) int { return 3*binary.MaxVarintLen64 + len(key) + len(value) }

// eachEntry calls fn with each entry of message m, in order; key and value
// alias m.
func eachEntry(m []byte, fn func(tag uint64, key, value []byte)) error {
	for len(m) > 0 {
		tag, n := binary.Uvarint(m)
		if n <= 0 {
			return errBadMessage
		}
		key, rest, err := field(m[n:])
		if err != nil {
			return err
		}
		value, rest, err := field(rest)
		if err != nil {
			return err
		}
		fn(tag, key, value)
		m = rest
	}
	return nil
}

// field splits a length-prefixed field off v.
func field(v []byte) ([]byte, []byte, error) {
	l, n := binary.Uvarint(v)
	if n <= 0 || l > uint64(len(v)-n) {
		return nil, nil, errBadMessage
	}
	v = v[n:]
	return v[:l:l], v[l:], nil
}

// batcher packs the entries queued on a link into messages: its writer
// sends, in one message, every entry queued since its previous send, so
// that the entries queued while a message is out share the next one.
type batcher struct {
	mu   sync.Mutex
	cur  []byte
	full [][]byte
	wake chan struct{}
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
		b.cur = make([]byte, 0, max(4<<10, size))
	}
	b.cur = appendEntry(b.cur, tag, key, value)
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
		for _, m := range b.take() {
			if err := send(m); err != nil {
				return err
			}
		}
	}
}

// codec is the links' gRPC codec: a message is its bytes.
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }

// Unmarshal copies data, which gRPC reuses once it returns.
func (codec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}

func (codec) Name() string { return "surge-peer" }
