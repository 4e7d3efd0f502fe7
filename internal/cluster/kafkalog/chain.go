package kafkalog

// Chain applies the replay rule of a changelog partition written by rounds
// without a transaction: it takes the partition's entries in log order and
// says which count.
//
//   - An epoch record always counts: from it on, its epoch is in force.
//   - A change or a trailer counts only if its epoch is the one in force:
//     a zombie's batch written after a later owner's epoch record does
//     not.
//
// A change is judged by its own epoch, not by its batch's trailer:
// compaction removes trailers (each epoch keeps only its last, which a
// zombie's late trailer of the same epoch may replace), so a rule that
// asked for a change's trailer would drop changes that counted. A change
// never lands without its trailer: a partition's part of a round is one
// record batch, which the broker appends whole or not at all (Writer).
type Chain struct {
	epoch Epoch
}

// NewChain starts a chain at an offset where epoch is in force: NoEpoch at
// the start of the log, or the epoch a local copy of the partition recorded
// with the offset it covers.
func NewChain(epoch Epoch) *Chain { return &Chain{epoch: epoch} }

// Epoch is the epoch in force after the entries added so far.
func (c *Chain) Epoch() Epoch { return c.epoch }

// Counts takes the next entry of the log and reports whether it counts.
func (c *Chain) Counts(e Entry) bool {
	if e.Kind == KindEpoch {
		c.epoch = e.Epoch
		return true
	}
	return e.Epoch == c.epoch
}
