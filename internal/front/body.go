package front

import (
	"errors"
	"io"
	"os"
	"slices"
	"time"
)

// bodyGrace is how long a body may take to start arriving before
// Limits.MinBodyRate applies: a client's first bytes may wait on its own
// serialisation or on a connection's slow start.
const bodyGrace = 2 * time.Second

// firstChunk is the most a body's buffer holds before its bytes arrive:
// larger bodies grow it as they come, so that a declared length costs
// nothing.
const firstChunk = 16 << 10

// pacer sets the read deadline of the connection a body arrives on so
// that, from start, the body must arrive at rate bytes a second once
// bodyGrace is over, and whole by hard (zero: no bound). A zero start
// starts the clock at the body's first bytes, which until then only hard
// bounds.
type pacer struct {
	set         func(time.Time) error
	start, hard time.Time
	rate        int64
}

// deadline is when the bytes after the first read must have arrived.
func (p pacer) deadline(read int64) time.Time {
	if p.start.IsZero() {
		return p.hard
	}
	d := p.start.Add(bodyGrace + time.Duration(read)*time.Second/time.Duration(p.rate))
	if !p.hard.IsZero() && d.After(p.hard) {
		return p.hard
	}
	return d
}

// readBody reads a body of declared length n (-1: unknown, read to at most
// most bytes) from src, paced by p, charging the body budget for each
// chunk as it arrives. On success the body holds len(body) bytes of the
// budget; on a refusal it holds nothing.
func (g *guard) readBody(src io.Reader, n, most int64, p pacer) ([]byte, *refusal) {
	want := most
	if n >= 0 {
		want = n
	}
	buf := make([]byte, 0, min(want, firstChunk))
	for int64(len(buf)) < want {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(len(buf), int(want)-len(buf)))
		}
		_ = p.set(p.deadline(int64(len(buf))))
		k, err := src.Read(buf[len(buf):min(cap(buf), int(want))])
		if k > 0 && !g.bodies.take(int64(k)) {
			g.bodies.give(int64(len(buf)))
			return nil, refuseOverloaded
		}
		buf = buf[:len(buf)+k]
		if k > 0 && p.start.IsZero() {
			p.start = time.Now()
		}
		if err == io.EOF && n < 0 {
			break
		}
		if err != nil && (err != io.EOF || int64(len(buf)) < want) {
			g.bodies.give(int64(len(buf)))
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, refuseSlow
			}
			return nil, refuseBodyRead
		}
	}
	return buf, nil
}
