package peer

// budget is the commands in flight on one side of a link, by request id,
// with their bytes: a link carries at most max commands and maxBytes of
// their keys and values at once. Its owner locks it.
type budget struct {
	calls         map[string]int
	bytes         int
	max, maxBytes int
}

func newBudget(cfg Config) budget {
	return budget{calls: map[string]int{}, max: cfg.MaxInFlight, maxBytes: cfg.MaxInFlightBytes}
}

// take counts call rid of size bytes in; false, counting nothing, if it
// is in already or over the budget.
func (b *budget) take(rid string, size int) bool {
	if _, dup := b.calls[rid]; dup || len(b.calls) >= b.max || b.bytes+size > b.maxBytes {
		return false
	}
	b.calls[rid] = size
	b.bytes += size
	return true
}

// give counts call rid out; false if it was not in.
func (b *budget) give(rid []byte) bool {
	size, ok := b.calls[string(rid)]
	if ok {
		delete(b.calls, string(rid))
		b.bytes -= size
	}
	return ok
}
