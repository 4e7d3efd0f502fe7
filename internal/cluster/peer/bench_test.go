package peer

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// BenchmarkLinkRoundTrip sends commands over a link, 64 in flight, each
// answered by the owner as soon as it takes it. cpu-ns/op is the
// process's CPU per command: both nodes' sides of the link, its
// goroutines and TLS, and the benchmark's own loop. The front node's
// writer sends as soon as it can (no commandLinger): with an owner that
// answers at once, its waits would leave the process idle between
// messages, and the benchmark measure the idling.
func BenchmarkLinkRoundTrip(b *testing.B) {
	defer func(d time.Duration) { commandLinger = d }(commandLinger)
	commandLinger = 0
	owner, front, done := linked(b)
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

// BenchmarkLinkRounds sends commands over a link as a front node's
// request handlers do: clients, each sending its next command once its
// previous one is answered, and an owner answering the commands it took
// in rounds, all of a round's at once. A client takes a while between
// its answer and its next command, as one over HTTP does (its answer's
// write, its next request's read): the commands of the clients a round
// sets free come spread over the next round. cpu-ns/op is the process's
// CPU per command, cmd-msgs/op and answer-msgs/op the messages written
// on the link each way per command.
func BenchmarkLinkRounds(b *testing.B) {
	const clients, round = 64, time.Millisecond
	owner, front, done := linked(b)
	defer close(done)
	go answerInRounds(owner, round, done)
	answered := make([]chan error, clients)
	for i := range answered {
		answered[i] = make(chan error, 1)
	}
	go func() { // the front node's Receiver: each answer to its client
		for {
			select {
			case a := <-front.answers:
				i, _ := strconv.Atoi(strings.Split(a.rid, "-")[1])
				answered[i] <- a.err
			case <-done:
				return
			}
		}
	}()
	value := make([]byte, 90) // an encoded transfer's size
	var wg sync.WaitGroup
	b.ResetTimer()
	began := cpuTime(b)
	for i := range clients {
		n := b.N / clients
		if i < b.N%clients {
			n++
		}
		wg.Go(func() {
			for seq := range n {
				time.Sleep(rand.N(round))
				for !front.Send(1, fmt.Appendf(nil, "0:a-%d-%d", i, seq), value) {
					b.Error("not sent over the link")
					return
				}
				if err := <-answered[i]; err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(cpuTime(b)-began)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(testutil.ToFloat64(front.met.commandMsgs)/float64(b.N), "cmd-msgs/op")
	b.ReportMetric(testutil.ToFloat64(owner.met.answerMsgs)/float64(b.N), "answer-msgs/op")
}

// answerInRounds has owner answer, each period of round, every command
// it took in the period before, until done closes.
func answerInRounds(owner *testNode, round time.Duration, done <-chan struct{}) {
	reply := []byte(`{"id":"t-0123456789","amount":1000,"state":"posted"}`)
	var mu sync.Mutex
	var taken []string
	go func() {
		for {
			select {
			case c := <-owner.taken:
				mu.Lock()
				taken = append(taken, c.key[len("0:"):])
				mu.Unlock()
			case <-done:
				return
			}
		}
	}()
	t := time.NewTicker(round)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-done:
			return
		}
		mu.Lock()
		rids := taken
		taken = nil
		mu.Unlock()
		for _, rid := range rids {
			owner.Reply([]byte(rid), reply)
		}
	}
}

// linked starts an owner of partition 1 and a front node linked to it;
// closing done ends the benchmark's goroutines.
func linked(b *testing.B) (owner, front *testNode, done chan struct{}) {
	dir := newDirectory(6)
	owner = startNode(b, "b", dir, 1)
	front = startNode(b, "a", dir)
	front.link(b, 1)
	return owner, front, make(chan struct{})
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
