package front

import (
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
)

// pipe returns an ackConn over one end of an in-memory connection and the
// other end, the client's.
func pipe(t *testing.T) (*ackConn, net.Conn) {
	t.Helper()
	server, client := net.Pipe()
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return &ackConn{replayConn: replayConn{Conn: server}}, client
}

// TestDeferredAcksRunBeforeTheWrite checks the promise of AckDeferrer: the
// bytes of a write reach the client only after every wait deferred before
// it has returned, in the order they were deferred, and each wait runs
// once.
func TestDeferredAcksRunBeforeTheWrite(t *testing.T) {
	c, client := pipe(t)
	var mu sync.Mutex
	var events []string
	record := func(e string) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	c.DeferAck(func() error { record("wait 1"); return nil })
	c.DeferAck(func() error { record("wait 2"); return nil })
	read := make(chan error, 1)
	go func() {
		buf := make([]byte, 5)
		_, err := io.ReadFull(client, buf)
		record("client read " + string(buf))
		read <- err
	}()
	if _, err := c.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.ReadFull(client, make([]byte, 4)) }()
	if _, err := c.Write([]byte("more")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"wait 1", "wait 2", "client read reply"}; !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
}

// TestFailedAckClosesWithoutWriting checks that a reply whose write could
// not be made durable never reaches the client: the connection closes
// instead, and stays unwritable.
func TestFailedAckClosesWithoutWriting(t *testing.T) {
	c, client := pipe(t)
	broken := errors.New("fsync failed")
	c.DeferAck(func() error { return broken })
	if _, err := c.Write([]byte("201 Created")); !errors.Is(err, broken) {
		t.Fatalf("Write after a failed ack: %v, want %v", err, broken)
	}
	if n, err := client.Read(make([]byte, 16)); n != 0 || err != io.EOF {
		t.Errorf("client read %d bytes, %v; want none and EOF", n, err)
	}
	if _, err := c.Write([]byte("later")); err == nil {
		t.Error("a later write succeeded after a failed ack")
	}
}

// TestCloseRunsDeferredWaits checks that a connection closed with
// acknowledgements outstanding still runs their waits (storage requires
// each applied write to be waited for).
func TestCloseRunsDeferredWaits(t *testing.T) {
	c, _ := pipe(t)
	ran := 0
	c.DeferAck(func() error { ran++; return nil })
	_ = c.Close()
	if ran != 1 {
		t.Errorf("the deferred wait ran %d times on Close, want 1", ran)
	}
}
