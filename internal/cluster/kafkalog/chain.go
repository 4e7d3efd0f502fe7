package kafkalog

// Chain applies the replay rule of a changelog partition written by rounds
// without a transaction: it takes the partition's entries in log order and
// says which count.
//
//   - An epoch record counts if its claim's Term is not below the term in
//     force: from it on, its epoch and term are in force. One whose term
//     is below is a zombie's claim (an owner the group moved on from,
//     claiming again before it learned so): it counts for nothing, and its
//     owner, reading up to it, learns it does not own the partition.
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
	term  Term
}

// Term orders the claims of a partition by the consumer group's authority
// over them: the generation of the group the claimer was assigned the
// partition in, within an Era. The group's coordinator never assigns a
// partition to two members in one generation, and its generations only
// grow, so a claim of a lower term than the one in force comes from an
// owner the group has since moved on from.
//
// Generations start again when the group is deleted and made again (the
// coordinator removes an empty group once its committed offsets expired,
// and rounds without a transaction commit none): the Era orders such
// incarnations. An owner whose claim would be below the term in force
// takes the partition only with an Era past the one in force, and only
// once the coordinator confirmed that its membership is current
// (StaleClaimError): a zombie's is not.
type Term struct {
	// Era counts the incarnations of the group, from 0.
	Era uint32
	// Generation is the group generation within the Era.
	Generation int32
}

// Less reports whether t orders before u.
func (t Term) Less(u Term) bool {
	if t.Era != u.Era {
		return t.Era < u.Era
	}
	return t.Generation < u.Generation
}

// NewChain starts a chain at an offset where epoch, claimed with term, is
// in force: NoEpoch and the zero Term at the start of the log, or what a
// local copy of the partition recorded with the offset it covers
// (ChainState).
func NewChain(epoch Epoch, term Term) *Chain { return &Chain{epoch: epoch, term: term} }

// Epoch is the epoch in force after the entries added so far.
func (c *Chain) Epoch() Epoch { return c.epoch }

// Term is the term of the claim in force after the entries added so far.
func (c *Chain) Term() Term { return c.term }

// Counts takes the next entry of the log and reports whether it counts.
func (c *Chain) Counts(e Entry) bool {
	if e.Kind == KindEpoch {
		if e.Claim.Term().Less(c.term) {
			return false
		}
		c.epoch, c.term = e.Epoch, e.Claim.Term()
		return true
	}
	return e.Epoch == c.epoch
}
