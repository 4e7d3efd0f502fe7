package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Producer appends commands to the partitions of the commands topic. Its
// writes are acknowledged by all in-sync replicas (acks=all) and idempotent:
// a retried send is written once.
//
// Commands appended at once share records and requests: one goroutine
// sends, one request at a time, every command queued since its last send,
// packed per partition (pack.go). Under load the commands of many clients
// thus cost the brokers one request, and a command waits at most for the
// request before it; an idle producer sends a command at once.
type Producer struct {
	cl    *kgo.Client
	topic string

	mu      sync.Mutex
	queue   []*pending
	wake    chan struct{}
	closing chan struct{}
	done    chan struct{}
}

// pending is a command waiting to be sent, and where its outcome goes.
type pending struct {
	partition  int32
	key, value []byte
	offset     int64
	err        error
	sent       chan struct{}
}

// deliveryTimeout bounds the brokers' acknowledgement of a send: a command
// not durable by then fails, and its caller answers unavailable.
const deliveryTimeout = 30 * time.Second

// producing are the options of every client that writes the cluster's
// records: each to the partition it names, acknowledged by every in-sync
// replica, lingering flushLinger, uncompressed (the brokers decompress a
// batch to check it), in batches up to MaxRecordBytes.
func producing() []kgo.Opt {
	return []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(flushLinger),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(MaxRecordBytes),
	}
}

// NewProducer connects a producer to the cluster c; opts are added last
// (tests use them for shorter timeouts).
func NewProducer(c Config, opts ...kgo.Opt) (*Producer, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	base := append(append(c.SeedsFor("producer"), producing()...),
		kgo.DefaultProduceTopic(c.CommandsTopic()),
		kgo.RecordDeliveryTimeout(deliveryTimeout),
	)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: producer: %w", err)
	}
	p := &Producer{cl: cl, topic: c.CommandsTopic(), wake: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{})}
	go p.send()
	return p, nil
}

// Append writes a command to partition p and returns its offset once it is
// durable on every in-sync replica. The commands appended to one
// partition are written in the order of their Appends.
func (p *Producer) Append(ctx context.Context, partition int32, key, value []byte) (int64, error) {
	c := &pending{partition: partition, key: key, value: value, sent: make(chan struct{})}
	p.mu.Lock()
	p.queue = append(p.queue, c)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default: // the sender is woken already
	}
	select {
	case <-c.sent:
		if c.err != nil {
			return 0, fmt.Errorf("kafkalog: appending to %s/%d: %w", p.topic, partition, c.err)
		}
		return c.offset, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// send sends the queued commands until Close.
func (p *Producer) send() {
	defer close(p.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-p.closing
		cancel()
	}()
	last := 0 // the commands of the previous request
	for {
		select {
		case <-p.closing:
			p.fail(p.take(), kgo.ErrClientClosed)
			return
		case <-p.wake:
		}
		if last >= busySend {
			p.linger()
		}
		cmds := p.take()
		last = len(cmds)
		p.flush(ctx, cmds)
	}
}

// A busy producer lingers before it sends: when its previous request
// carried at least busySend commands, the next waits sendLinger for the
// rest of the burst it belongs to (the clients a round's replies set
// free send their next requests together). At low load a command is sent
// at once.
var (
	busySend   = 4
	sendLinger = 2 * time.Millisecond
)

// linger waits sendLinger, or until Close.
func (p *Producer) linger() {
	t := time.NewTimer(sendLinger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.closing:
	}
}

// take empties the queue.
func (p *Producer) take() []*pending {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queue
	p.queue = nil
	return q
}

// flush writes cmds, packed, in one request per broker and tells each
// its outcome.
func (p *Producer) flush(ctx context.Context, cmds []*pending) {
	if len(cmds) == 0 {
		return
	}
	pk := newPacker(p.topic)
	carried := make([]*kgo.Record, len(cmds))
	for i, c := range cmds {
		carried[i] = pk.add(c.partition, c.key, c.value)
	}
	failed, _ := produceAll(ctx, p.cl, pk.records)
	for i, c := range cmds {
		if c.err = failed[carried[i]]; c.err == nil {
			c.offset = carried[i].Offset
		}
		close(c.sent)
	}
}

// flushLinger is how long a record produced may wait for a flush, which
// produceAll ends with: far longer than any flush takes to come. Sent as
// soon as it is produced (no linger), a group's first record would travel
// alone, and the rest in a request after it.
const flushLinger = time.Minute

// produceAll writes records, on a client lingering flushLinger, in one
// request per broker, and returns the errors of those that failed, and
// whether every record settled. It returns when each record succeeded or
// failed, or when ctx ends: a record still in flight then (its request
// sent, its answer not come) fails with ctx's error, though the brokers
// may yet write it. The flush ends the client's linger over the records,
// which produceEach produces once the client knows their partitions, so
// that it sees each.
func produceAll(ctx context.Context, cl *kgo.Client, records []*kgo.Record) (failed map[*kgo.Record]error, settled bool) {
	p := produceEach(ctx, cl, records)
	// An error here is ctx's end, which fails every record not sent.
	_ = cl.Flush(ctx)
	return p.wait(ctx)
}

// promised are records produced and the outcomes franz-go promises them.
type promised struct {
	mu      sync.Mutex
	failed  map[*kgo.Record]error
	pending map[*kgo.Record]bool
	done    chan struct{}
}

// produceEach produces records and collects their outcomes. It produces
// them once cl knows their partitions (knowPartitions); if it cannot
// learn them, each record fails unsent.
func produceEach(ctx context.Context, cl *kgo.Client, records []*kgo.Record) *promised {
	p := &promised{
		failed:  make(map[*kgo.Record]error, len(records)),
		pending: make(map[*kgo.Record]bool, len(records)),
		done:    make(chan struct{}),
	}
	if err := knowPartitions(ctx, cl, records); err != nil {
		for _, r := range records {
			p.failed[r] = err
		}
		records = nil
	}
	for _, r := range records {
		p.pending[r] = true
	}
	if len(records) == 0 {
		close(p.done)
	}
	for _, r := range records {
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if err != nil {
				p.failed[r] = err
			}
			delete(p.pending, r)
			if len(p.pending) == 0 {
				close(p.done)
			}
		})
	}
	return p
}

// knowPartitions has cl load the partitions of the records' topics before
// they are produced. franz-go partitions a record produced to a topic it
// has not loaded on the goroutine that stores the topic's metadata, where
// the record begins to linger; a Flush under way then may not see its
// partition yet, and leaves it lingering flushLinger, past its delivery
// timeout. A record of partition -1 is refused once its topic's
// partitions load, never sent; Produce partitions a record after that
// refusal itself, so that the Flush which follows sees it. It returns the
// error of a refusal that came without the partitions: the context's
// end, the delivery timeout, the client's close, or the brokers' own
// error (a topic that does not exist, a denied one), which producing the
// records would only meet again. cl consumes nothing: PartitionLeader
// would report a consumer's partitions too. A topic's partitions load
// together, so it asks once per topic.
func knowPartitions(ctx context.Context, cl *kgo.Client, records []*kgo.Record) error {
	var asked []string
	for _, r := range records {
		if slices.Contains(asked, r.Topic) {
			continue
		}
		asked = append(asked, r.Topic)
		if leader, _, _ := cl.PartitionLeader(r.Topic, r.Partition); leader >= 0 {
			continue
		}
		refused := make(chan error, 1)
		cl.Produce(ctx, &kgo.Record{Topic: r.Topic, Partition: -1}, func(_ *kgo.Record, err error) { refused <- err })
		err := <-refused
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		var brokers *kerr.Error
		if errors.Is(err, kgo.ErrRecordTimeout) || errors.Is(err, kgo.ErrClientClosed) || errors.As(err, &brokers) {
			return err
		}
	}
	return nil
}

// wait returns the errors of the records that failed once each succeeded
// or failed, or when ctx ends, with ctx's error for those not settled
// then; settled reports that none was left.
func (p *promised) wait(ctx context.Context) (failed map[*kgo.Record]error, settled bool) {
	select {
	case <-p.done:
		return p.failed, true
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[*kgo.Record]error, len(p.failed)+len(p.pending))
	for r, err := range p.failed {
		out[r] = err
	}
	for r := range p.pending {
		out[r] = ctx.Err()
	}
	return out, len(p.pending) == 0
}

func (p *Producer) fail(cmds []*pending, err error) {
	for _, c := range cmds {
		c.err = err
		close(c.sent)
	}
}

// Close fails the commands not sent yet and closes the connections.
func (p *Producer) Close() {
	close(p.closing)
	<-p.done
	p.cl.Close()
}
