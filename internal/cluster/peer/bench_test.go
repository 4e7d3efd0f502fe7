package peer

import (
	"strconv"
	"syscall"
	"testing"
)

// BenchmarkLinkRoundTrip sends commands over a link, 64 in flight, each
// answered by the owner as soon as it takes it. cpu-ns/op is the
// process's CPU per command: both nodes' sides of the link, its
// goroutines and TLS, and the benchmark's own loop.
func BenchmarkLinkRoundTrip(b *testing.B) {
	dir := newDirectory(6)
	owner := startNode(b, "b", dir, 1)
	front := startNode(b, "a", dir)
	front.link(b, 1)
	done := make(chan struct{})
	defer close(done)
	reply := []byte(`{"id":"t-0123456789","amount":1000,"state":"posted"}`)
	go func() {
		for {
			select {
			case c := <-owner.taken:
				owner.Reply([]byte(c.key[len("0:"):]), reply)
			case <-done:
				return
			}
		}
	}()
	value := make([]byte, 90) // an encoded transfer's size
	sent := 0
	send := func() {
		sent++
		if !front.Send(1, []byte("0:a-"+strconv.Itoa(sent)), value) {
			b.Fatal("not sent over the link")
		}
	}
	b.ResetTimer()
	began := cpuTime(b)
	for range min(64, b.N) {
		send()
	}
	for range b.N {
		if a := <-front.answers; a.err != nil {
			b.Fatal(a.err)
		}
		if sent < b.N {
			send()
		}
	}
	b.ReportMetric(float64(cpuTime(b)-began)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
