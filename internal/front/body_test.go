package front

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// chunks reads its parts one per Read, then fails with err.
type chunks struct {
	parts []string
	err   error
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, c.err
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

func testPacer() pacer {
	return pacer{set: func(time.Time) error { return nil }, start: time.Now(), rate: 1}
}

// TestReadBodyChargesWhatArrives: a body is charged for the bytes read,
// not those declared, and a refusal gives every byte back.
func TestReadBodyChargesWhatArrives(t *testing.T) {
	g := newGuard(Limits{BodyBytes: 100, MaxWork: 10}.withDefaults(), nil)
	g.bodies.limit = 100
	for _, tc := range []struct {
		name     string
		src      io.Reader
		n, most  int64
		want     *refusal
		wantBody string
	}{
		{"whole", &chunks{parts: []string{"ab", "cd"}, err: io.EOF}, 4, 5, nil, "abcd"},
		{"unknown length", &chunks{parts: []string{"ab", "cd"}, err: io.EOF}, -1, 5, nil, "abcd"},
		{"cut past the limit", strings.NewReader(strings.Repeat("x", 9)), -1, 5, nil, "xxxxx"},
		{"ends early", &chunks{parts: []string{"ab"}, err: io.EOF}, 4, 5, refuseBodyRead, ""},
		{"stalls", &chunks{parts: []string{"ab"}, err: os.ErrDeadlineExceeded}, 90, 91, refuseSlow, ""},
		{"over the budget", iotest.OneByteReader(strings.NewReader(strings.Repeat("x", 101))), 101, 102, refuseOverloaded, ""},
		{"fails", &chunks{err: errors.New("reset")}, 4, 5, refuseBodyRead, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, no := g.readBody(tc.src, tc.n, tc.most, testPacer())
			if no != tc.want || string(b) != tc.wantBody {
				t.Fatalf("got %q %v, want %q %v", b, no, tc.wantBody, tc.want)
			}
			if held := g.bodies.used.Load(); held != int64(len(b)) {
				t.Fatalf("the budget holds %d, want %d", held, len(b))
			}
			g.bodies.give(int64(len(b)))
		})
	}
}

// TestPacerDeadline: a body must arrive at the rate once the grace is
// over, and whole by the hard deadline.
func TestPacerDeadline(t *testing.T) {
	start := time.Unix(1000, 0)
	p := pacer{start: start, rate: 100}
	if got, want := p.deadline(0), start.Add(bodyGrace); !got.Equal(want) {
		t.Fatalf("deadline(0) = %v, want %v", got, want)
	}
	if got, want := p.deadline(250), start.Add(bodyGrace+2500*time.Millisecond); !got.Equal(want) {
		t.Fatalf("deadline(250) = %v, want %v", got, want)
	}
	p.hard = start.Add(time.Second)
	if got := p.deadline(250); !got.Equal(p.hard) {
		t.Fatalf("deadline past the hard one = %v, want %v", got, p.hard)
	}
}
