package peer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A message on a link is a batch of entries packed as the records of
// the commands topic pack theirs (kafkalog.AppendEntry), each entry's
// value prefixed with a tag (uvarint). A command's tag is its partition,
// its key the command's key ("<inbox>:<request id>") and the rest of its
// value the command; a forward or answers of the rounds' forwards
// (Peers.Forward) are entries of the same form, with their own key and a
// value beginning with kafkalog.ForwardTag or AnswerTag, and no answer. An answer's tag is its kind (answer*), its key the
// request id and the rest of its value the reply.

// The kinds of answer an owner sends back for a command.
const (
	// answerReply carries the reply of a committed round, or the owner's
	// refusal of an overloaded partition (calls.Refusal, an empty reply).
	answerReply uint64 = iota
	// answerFailed: the command's outcome is unknown, or the link refused
	// it (over its budget, or not the front node's request).
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
	// spare is a message's buffer the writer is done with, for the next.
	spare []byte
	wake  chan struct{}
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
		b.cur, b.spare = b.spare, nil
	}
	if b.cur == nil {
		b.cur = make([]byte, 0, max(4<<10, size))
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

// reuse keeps the buffer of a message sent for the next, unless it is
// larger than messages mostly are.
func (b *batcher) reuse(m []byte) {
	if cap(m) > 64<<10 {
		return
	}
	b.mu.Lock()
	if b.spare == nil {
		b.spare = m[:0]
	}
	b.mu.Unlock()
}

// run sends the queued messages with send, which is done with each once
// it returns, until done closes or a send fails; and a ping, an empty
// message, each period of ping in which it sent nothing (0: none).
func (b *batcher) run(done <-chan struct{}, send func([]byte) error, ping time.Duration) error {
	var tick <-chan time.Time
	if ping > 0 {
		t := time.NewTicker(ping)
		defer t.Stop()
		tick = t.C
	}
	sent := false
	for {
		select {
		case <-b.wake:
		case <-tick:
			if !sent {
				if err := send(nil); err != nil {
					return err
				}
			}
			sent = false
			continue
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
			b.reuse(m)
			sent = true
		}
	}
}

// A link is a TLS connection carrying messages each way, each framed by
// its length (4 bytes, big-endian); a message of length 0 is a ping,
// which a side sends when it wrote nothing for pingEvery, so that the
// other, which reads something at least that often, ends a link silent
// for readTimeout: its peer vanished without closing it. The owner's
// first message, a ping, says that it took the link.
//
// Framing by hand rather than a gRPC stream: gRPC's writer and reader
// goroutines cost two more wake-ups per message, and its framing and
// per-message bookkeeping more CPU. BenchmarkLinkRoundTrip (64 commands in
// flight, ABBA x4) measured 2,256-2,389 CPU ns per command over a gRPC
// stream against 1,347-1,535 framed (0.63x).
const (
	frameHeader = 4
	pingEvery   = keepaliveTime / 2
	readTimeout = keepaliveTime + keepaliveTimeout
)

// frames reads and writes a link's messages. One goroutine reads and one
// writes.
type frames struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
	// armed is when the read deadline was last moved: it is moved once a
	// second at most, not before every message.
	armed time.Time
}

func newFrames(c net.Conn) *frames {
	return &frames{c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 64<<10)}
}

// write sends message m (empty: a ping), header and body in one TLS
// record when they fit in one.
func (f *frames) write(m []byte) error {
	var h [frameHeader]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(m)))
	_, _ = f.w.Write(h[:])
	_, _ = f.w.Write(m)
	return f.w.Flush()
}

// read returns the next message, which the caller owns, skipping pings;
// an error once the link is silent for readTimeout, or sends a message
// over maxMessage.
func (f *frames) read() ([]byte, error) {
	for {
		n, err := f.header()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			continue
		}
		m := make([]byte, n)
		if _, err := io.ReadFull(f.r, m); err != nil {
			return nil, err
		}
		return m, nil
	}
}

// header reads a message's header and returns its length.
func (f *frames) header() (int, error) {
	if now := time.Now(); now.Sub(f.armed) > time.Second {
		if err := f.c.SetReadDeadline(now.Add(readTimeout)); err != nil {
			return 0, err
		}
		f.armed = now
	}
	var h [frameHeader]byte
	if _, err := io.ReadFull(f.r, h[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > maxMessage {
		return 0, errBadMessage
	}
	return int(n), nil
}

// welcomed waits for the owner's first message, which says it took the
// link (the caller bounds the wait with the connection's deadline); a
// client whose certificate the owner refused gets the handshake's alert
// instead.
func (f *frames) welcomed() error {
	f.armed = time.Now() // header leaves the caller's deadline be
	n, err := f.header()
	if err == nil && n != 0 {
		err = errBadMessage
	}
	f.armed = time.Time{} // the next read arms readTimeout
	return err
}
