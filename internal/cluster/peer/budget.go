package peer

// budget counts the commands in flight on one side of a link, and their
// bytes: a link carries at most max commands and maxBytes of their keys
// and values at once. Its owner locks it, and keeps which commands it
// counts, with their sizes: the front node by request id on its link, the
// owner in the map that says which link each command's answer goes back on.
type budget struct {
	calls, bytes  int
	max, maxBytes int
}

func newBudget(cfg Config) budget {
	return budget{max: cfg.MaxInFlight, maxBytes: cfg.MaxInFlightBytes}
}

// take counts a call of size bytes in; false, counting nothing, if it is
// over the budget.
func (b *budget) take(size int) bool {
	if b.calls >= b.max || b.bytes+size > b.maxBytes {
		return false
	}
	b.calls++
	b.bytes += size
	return true
}

// give counts a call of size bytes, taken before, out.
func (b *budget) give(size int) {
	b.calls--
	b.bytes -= size
}
