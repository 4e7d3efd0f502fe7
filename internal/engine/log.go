package engine

import (
	"sync"
)

// Log is a shard's input: an ordered stream of commands with one reader,
// the shard. The in-memory implementation is a bounded queue; a Kafka
// partition could implement it and feed the same shard and domain code,
// with replies then routed through a reply topic instead of Envelope.call.
// A Log tells the engine that it may hold commands by a send on the ready
// channel it was made with, so that the engine can start a round.
type Log interface {
	// Append adds e to the end of the log. Unless force is set it fails
	// fast with ErrOverloaded when the log is full: clients are told to come
	// back rather than queued without bound. Commands the engine itself must
	// not lose, such as a Tick, are forced.
	Append(e Envelope, force bool) error
	// Read returns up to max commands in order, none if the log is empty.
	// The slice is the caller's until its next Read.
	Read(max int) []Envelope
	// Len is the number of commands waiting.
	Len() int
	// Close refuses further appends; what the log holds can still be read.
	Close()
}

// memLog is the in-process Log: a mutex-guarded slice that the reader
// swaps out whole, so one lock round-trip hands over a whole batch.
type memLog struct {
	mu       sync.Mutex
	queue    []Envelope
	spare    []Envelope
	capacity int
	closed   bool
	// ready, shared by the engine's logs, has capacity 1: "some log may
	// hold commands".
	ready chan<- struct{}
}

func newMemLog(capacity int, ready chan<- struct{}) *memLog {
	return &memLog{capacity: capacity, ready: ready}
}

func (l *memLog) Append(e Envelope, force bool) error {
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return ErrClosed
	case !force && len(l.queue) >= l.capacity:
		l.mu.Unlock()
		return ErrOverloaded
	}
	l.queue = append(l.queue, e)
	l.mu.Unlock()
	select {
	case l.ready <- struct{}{}:
	default:
	}
	return nil
}

func (l *memLog) Read(max int) []Envelope {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return nil
	}
	return l.take(min(len(l.queue), max))
}

// take removes the first n envelopes; l.mu is held.
func (l *memLog) take(n int) []Envelope {
	clear(l.spare) // drop references from the batch before last
	if n == len(l.queue) {
		out := l.queue
		l.queue, l.spare = l.spare[:0], out
		return out
	}
	out := append(l.spare[:0], l.queue[:n]...)
	rest := copy(l.queue, l.queue[n:])
	clear(l.queue[rest:])
	l.queue = l.queue[:rest]
	l.spare = out
	return out
}

func (l *memLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

func (l *memLog) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}
