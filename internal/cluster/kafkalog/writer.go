package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Writer writes a node's rounds to the changelog without a transaction
// ("Rounds without a transaction", docs/CLUSTER.md): per partition it owns,
// an epoch record first (Claim), then each round's part as one record
// batch, its changes and a trailer (Write). Its writes are idempotent and
// acknowledged by all in-sync replicas; whether one counts is decided by
// the log's order (Chain), which Write reports.
//
// Claims and Writes run one at a time: franz-go sends a partition's records
// as one batch only if nothing drains its buffers while they are produced,
// and a concurrent write's answers, retries or flush would. A write waits
// for its own records only, up to its context's end; one that leaves a
// record unsettled or failed leaves the client to be closed and goes on
// with a new one (renew), so that no record of it drains beside a later
// write's, nor holds it.
type Writer struct {
	cfg   Config
	topic string
	opts  []kgo.Opt

	mu      sync.Mutex
	cl      *kgo.Client
	owned   map[int32]claimed
	retired sync.WaitGroup // clients renew closes
}

// claimed is a partition the writer claimed: its epoch, the claim's term
// and member, and the offset just after the writer's last record there,
// where its next write should begin.
type claimed struct {
	epoch  Epoch
	term   Term
	member string
	end    int64
}

// Update is one change of a round's batch: a key of the shard's state and
// its new value (nil: deleted).
type Update struct {
	// Key is the storage key, Value its new value (nil: deleted).
	Key, Value []byte
}

// Batch is one partition's part of a round.
type Batch struct {
	// Partition is the changelog partition, the shard's.
	Partition int32
	// Updates are the round's changes to the shard's state, in order.
	Updates []Update
	// Commands is the offset of the commands topic the partition's owners
	// consumed up to (the next one to read), -1 if none ever did
	// (Trailer.Commands).
	Commands int64
	// Book is the partition's bookkeeping of forwards after the round (nil:
	// empty), restated in the trailer.
	Book *Book
}

// Written is what became of a Batch.
type Written struct {
	// Partition is the batch's.
	Partition int32
	// Base is the offset of the batch's first record, End the offset just
	// after its trailer.
	Base, End int64
	// Valid reports that the batch counts: no other owner claimed the
	// partition between the writer's previous record there and Base. A
	// batch not valid is fenced: it never counts, and the writer no longer
	// writes the partition.
	Valid bool
	// Foreign is where other writers' records begin before a valid batch
	// (Base if there are none): a zombie's records, which do not count,
	// whose keys the owner writes again (compaction could otherwise keep a
	// zombie's record and drop the value that counts).
	Foreign int64
	// ForeignKeys are the keys the foreign records changed, sorted: what
	// the owner writes again, with their current values.
	ForeignKeys [][]byte
	// Err, if set, means the batch's outcome is unknown: it may count or
	// not, whole. The writer no longer writes the partition.
	Err error
}

var (
	// ErrNotClaimed refuses a Write to a partition the writer has not
	// claimed, or no longer writes (fenced, or an unknown outcome).
	ErrNotClaimed = errors.New("kafkalog: partition not claimed by this writer")
	// ErrRoundTooLarge refuses a Write whose batch for some partition would
	// not fit one record batch (MaxRecordBytes), or whose records would not
	// fit the writer's buffer: the caller splits the round. Nothing of
	// the Write is sent.
	ErrRoundTooLarge = errors.New("kafkalog: a round's batch exceeds one record batch")
	// ErrSplitBatch reports a batch whose records did not land side by
	// side: it went as more than one record batch, whose parts may count
	// apart.
	ErrSplitBatch = errors.New("kafkalog: a round's batch was sent as several record batches")
)

// writerMaxRecords bounds the records of one Write: the client's buffer
// holds them all, since a full buffer makes franz-go send what it holds.
const writerMaxRecords = 1 << 20

// NewWriter connects a writer to the changelog of cluster c; opts are added
// last.
//
// The client stops producing on data loss: franz-go otherwise answers
// OUT_OF_ORDER_SEQUENCE_NUMBER and UNKNOWN_PRODUCER_ID by taking a new
// producer epoch and sending the batch again, and a batch that counted,
// its acknowledgement lost, would land a second time, perhaps after
// another owner's epoch record, where the writer would judge it fenced.
// Stopped, it fails the batch: its outcome is unknown, and the writer
// renews its client.
func NewWriter(c Config, opts ...kgo.Opt) (*Writer, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	base := append(append(c.SeedsFor("writer"), producing()...),
		kgo.MaxBufferedRecords(writerMaxRecords),
		kgo.RecordDeliveryTimeout(deliveryTimeout),
		kgo.StopProducerOnDataLossDetected(),
	)
	w := &Writer{cfg: c, topic: c.ChangelogTopic(), opts: append(base, opts...), owned: map[int32]claimed{}}
	cl, err := kgo.NewClient(w.opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: changelog writer: %w", err)
	}
	w.cl = cl
	return w, nil
}

// Claim appends an epoch record for the owner c to partition and returns
// its epoch, the offset it landed at: the owner restores the partition up
// to it, and its writes there count until another owner claims it, if
// the claim took the partition: a claim of a term below the one in force
// does not (Chain), which only a restore up to it tells (Owner.Take).
func (w *Writer) Claim(ctx context.Context, partition int32, c Claim) (Epoch, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.owned, partition)
	c.Nonce = rand.Uint64()
	r := EpochRecord(w.topic, partition, c)
	if err := w.send(ctx, []*kgo.Record{r})[r]; err != nil {
		return NoEpoch, fmt.Errorf("kafkalog: claiming %s/%d: %w", w.topic, partition, err)
	}
	w.owned[partition] = claimed{epoch: Epoch(r.Offset), term: c.Term(), member: c.Member, end: r.Offset + 1}
	return Epoch(r.Offset), nil
}

// send produces records (produceAll) and returns the errors of those
// that failed. The client holds no records but these: one write at a
// time, and a write that leaves any unsettled, or any failed, renews it.
func (w *Writer) send(ctx context.Context, records []*kgo.Record) map[*kgo.Record]error {
	failed, settled := produceAll(ctx, w.cl, records)
	if !settled || len(failed) > 0 {
		w.renew()
	}
	return failed
}

// renew goes on with a new client and closes the one in use: its records
// not settled would drain beside a later write's, splitting its batches,
// and one stopped on data loss produces no more.
func (w *Writer) renew() {
	cl, err := kgo.NewClient(w.opts...)
	if err != nil {
		// The options made a client before: this does not happen, and the
		// old client goes on.
		return
	}
	old := w.cl
	w.cl = cl
	w.retired.Add(1)
	go func() {
		defer w.retired.Done()
		old.Close()
	}()
}

// fits refuses with ErrRoundTooLarge a batch the writer could not write
// even in a round of its own, or with ErrNotClaimed one of a partition it
// does not write.
func (w *Writer) fits(b Batch) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.records([]Batch{b})
	return err
}

// Drop stops writing partition: the node gave it up.
func (w *Writer) Drop(partition int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.owned, partition)
}

// Epoch returns the writer's epoch over partition, and false if it does
// not write it.
func (w *Writer) Epoch(partition int32) (Epoch, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.owned[partition]
	return o.epoch, ok
}

// Close closes the writer's connections.
func (w *Writer) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cl.Close()
	w.retired.Wait()
}
