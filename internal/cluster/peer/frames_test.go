package peer

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
)

// A command and its reply cost a link one TLS record each way: no
// flow-control window update, ping or ping's ack comes with them.
func TestALinkWritesOneRecordPerMessage(t *testing.T) {
	dir := newDirectory(6)
	owner := startNode(t, "b", dir, 1)
	front := startNode(t, "a", dir)
	toOwner, toFront := &recordCounter{}, &recordCounter{}
	dir.set("b", entry{Addr: relay(t, owner.Addr(), toOwner, toFront), FP: owner.fp, Owned: []int32{1}})
	front.link(t, 1)
	roundTrip := func(i int) {
		rid := fmt.Sprintf("a-%d", i)
		if !front.Send(1, []byte("0:"+rid), []byte("cmd")) {
			t.Fatalf("command %d not sent", i)
		}
		<-owner.taken
		owner.Reply([]byte(rid), []byte("done"))
		if a := <-front.answers; a.rid != rid || a.err != nil {
			t.Fatalf("answer %+v", a)
		}
	}
	roundTrip(0) // past the handshake and the owner's session tickets
	sent, got := toOwner.records.Load(), toFront.records.Load()
	const n = 20
	for i := range n {
		roundTrip(i + 1)
	}
	// The owner's reply follows each command, so the front node's
	// records of the command are all counted; one of its own for the
	// last reply, were it to send one, may still be on its way.
	if d := toOwner.records.Load() - sent; d > n+1 {
		t.Errorf("the front node wrote %d records for %d commands", d, n)
	}
	if d := toFront.records.Load() - got; d != n {
		t.Errorf("the owner wrote %d records for %d replies", d, n)
	}
}

// relay forwards the connections to its address to addr, counting the
// TLS records of each way in up and down; it returns its address.
func relay(t *testing.T, addr string, up, down *recordCounter) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { c.Close(); s.Close() })
			go pipe(s, c, up)
			go pipe(c, s, down)
		}
	}()
	return ln.Addr().String()
}

// pipe copies from src to dst, counting src's TLS records in n before
// dst gets them, until either ends.
func pipe(dst, src net.Conn, n *recordCounter) {
	_, _ = io.Copy(io.MultiWriter(n, dst), src)
	dst.Close()
	src.Close()
}

// recordCounter counts the TLS records written to it: each is a 5-byte
// header, whose last two bytes give the length of the body that follows.
type recordCounter struct {
	records atomic.Int64
	header  []byte
	skip    int
}

func (r *recordCounter) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		if r.skip > 0 {
			k := min(r.skip, len(rest))
			r.skip, rest = r.skip-k, rest[k:]
			continue
		}
		k := min(5-len(r.header), len(rest))
		r.header, rest = append(r.header, rest[:k]...), rest[k:]
		if len(r.header) == 5 {
			r.skip = int(r.header[3])<<8 | int(r.header[4])
			r.header = r.header[:0]
			r.records.Add(1)
		}
	}
	return len(p), nil
}

// The entries that goroutines runnable at once queue on a link share a
// message: the writer, woken by the first, lets the others queue theirs
// before it takes them. One P runs them all, so the order is the
// scheduler's: the writer, woken, runs as soon as the first sender is done.
func TestALinkPacksTheEntriesQueuedAtOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 20
	b := newBatcher()
	sent := make(chan int, n)
	done := make(chan struct{})
	defer close(done)
	go func() {
		_ = b.run(done, func(m []byte) error {
			k := 0
			_ = eachEntry(m, func(uint64, []byte, []byte) { k++ })
			sent <- k
			return nil
		}, 0)
	}()
	for i := range n {
		go b.add(1, []byte(fmt.Sprintf("0:a-%d", i)), []byte("cmd"))
	}
	msgs := 0
	for got := 0; got < n; msgs++ {
		got += <-sent
	}
	if msgs > n/2 {
		t.Errorf("%d entries queued at once went in %d messages", n, msgs)
	}
}
