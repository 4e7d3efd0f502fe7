package front

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
)

// Everything written reaches the peer in order, and Close sends what is
// still queued before the peer sees the end.
func TestCoalescedConnKeepsOrderAndDrainsOnClose(t *testing.T) {
	client, server := net.Pipe()
	w := newCoalescedConn(server)
	var want bytes.Buffer
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(client)
		got <- b
	}()
	for i := range 1000 {
		p := bytes.Repeat([]byte{byte(i)}, i%97+1)
		want.Write(p)
		if n, err := w.Write(p); n != len(p) || err != nil {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, want.Bytes()) {
		t.Fatalf("the peer read %d bytes, want the %d written, in order", len(b), want.Len())
	}
}

// A peer that stops reading holds the writer back once maxCoalesced bytes
// wait, and the socket's error reaches a later write.
func TestCoalescedConnHoldsBackAndReportsErrors(t *testing.T) {
	client, server := net.Pipe()
	w := newCoalescedConn(server)
	chunk := make([]byte, 4<<10)
	written := 0
	done := make(chan error)
	go func() {
		for {
			if _, err := w.Write(chunk); err != nil {
				done <- err
				return
			}
			written += len(chunk)
		}
	}()
	// The pipe takes nothing until read: the writer stops at the bound.
	if _, err := client.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	_ = client.Close()
	err := <-done
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("write after the peer closed: %v, want the socket's error", err)
	}
	if written > 2*maxCoalesced+len(chunk) {
		t.Fatalf("%d bytes taken for a peer that read 1, want at most about %d", written, maxCoalesced)
	}
}
