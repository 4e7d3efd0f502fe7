// Package sociallog is the social log of a surge cluster on Apache Kafka
// (docs/CLUSTER.md, "The wallet in a cluster"): a topic of one partition,
// C.social, that every node reads whole and in order, applying each record
// to its own copy of the wallet's social state, so that every node holds
// all of it. A node appends a change (Propose: acks=all, idempotent) and
// answers its caller once its own apply has reached the record.
package sociallog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// Topic is the social log's topic of cluster c.
func Topic(c kafkalog.Config) string {
	name := c.Cluster
	if name == "" {
		name = kafkalog.DefaultCluster
	}
	return name + ".social"
}

// syncTimeout bounds a request for the log's end.
const syncTimeout = 10 * time.Second

// Apply applies the record at offset and returns the outcome its proposer
// waits for; an error stops the log (the node's copy can take no more).
type Apply func(offset int64, record []byte) (any, error)

// ErrStopped is returned by Propose once the log stopped applying.
var ErrStopped = errors.New("sociallog: the log stopped applying")

// Log is a node's handle on the social log.
type Log struct {
	topic     string
	snapTopic string
	snaps     Snapshots
	cfg       kafkalog.Config
	opts      []kgo.Opt
	prod      *kgo.Client
	cons      *kgo.Client
	log       *slog.Logger
	// prefix makes the keys of this incarnation's proposals unique.
	prefix string
	seq    atomic.Uint64
	ends   endReader

	logRead, snapRead, snapWritten atomic.Int64
	// writing is set while a snapshot of this node's is written, by a
	// goroutine of writers that Close cancels (bg) and waits for.
	writing atomic.Bool
	writers sync.WaitGroup
	bg      context.Context
	stopBg  context.CancelFunc

	mu      sync.Mutex
	waiting map[string]chan any
	// next is the offset of the next record to apply.
	next    int64
	reached chan struct{} // closed and renewed each time next moves
	failure error
	dead    chan struct{} // closed with failure
	done    chan struct{}
}

// Open connects to the social log of cluster c, creating its topics if
// need be, with snaps for its snapshots. Nothing is applied until Run.
func Open(ctx context.Context, c kafkalog.Config, snaps Snapshots, logger *slog.Logger, opts ...kgo.Opt) (*Log, error) {
	if logger == nil {
		logger = slog.Default()
	}
	l := &Log{
		topic: Topic(c), snapTopic: SnapshotTopic(c), snaps: snaps, cfg: c, opts: opts, log: logger,
		waiting: map[string]chan any{}, reached: make(chan struct{}), dead: make(chan struct{}), done: make(chan struct{}),
	}
	l.bg, l.stopBg = context.WithCancel(context.Background())
	var err error
	l.prod, err = kgo.NewClient(append(append(c.Seeds(),
		kgo.DefaultProduceTopic(l.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
	), opts...)...)
	if err != nil {
		return nil, fmt.Errorf("sociallog: %w", err)
	}
	l.ends = endReader{cl: l.prod, topic: l.topic}
	if err := l.ensureTopics(ctx, c); err != nil {
		l.prod.Close()
		return nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	l.prefix = hex.EncodeToString(id[:]) + "-"
	return l, nil
}

// ensureTopics creates the log's topic and its snapshots', or finds them,
// and returns once the log's leader answers. Both have one partition and
// no retention: the log is cut only below a snapshot (snapshot.go), and
// the snapshot topic below the previous snapshot.
func (l *Log) ensureTopics(ctx context.Context, c kafkalog.Config) error {
	adm := kadm.NewClient(l.prod)
	configs := map[string]*string{
		"cleanup.policy":  kadm.StringPtr("delete"),
		"retention.ms":    kadm.StringPtr("-1"),
		"retention.bytes": kadm.StringPtr("-1"),
	}
	topics := []string{l.topic}
	if l.snaps.State != nil {
		topics = append(topics, l.snapTopic)
	}
	for try := 1; ; try++ {
		resp, err := adm.CreateTopics(ctx, 1, c.Replicas(), configs, topics...)
		if err == nil {
			err = created(resp)
		}
		if err == nil {
			_, err = l.ends.read()
		}
		if err == nil || try == 30 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// Run applies the log's records from offset from on, in order, with
// apply, and returns once every record appended before the call is
// applied: the node's copy is then at least as new as the log was when it
// started.
func (l *Log) Run(ctx context.Context, c kafkalog.Config, from int64, apply Apply, opts ...kgo.Opt) error {
	end, err := l.ends.get(ctx)
	if err != nil {
		return err
	}
	if from > end {
		return fmt.Errorf("sociallog: the node's store has applied %s up to %d, past its end %d: another cluster's data?", l.topic, from, end)
	}
	// The fetch wait is kgo's default (5 s): a read_committed fetch
	// returns as soon as a record is committed, so the wait only sets how
	// often an idle log asks again.
	l.cons, err = kgo.NewClient(append(append(c.Seeds(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.topic: {0: kgo.NewOffset().At(from)}}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
	), opts...)...)
	if err != nil {
		return fmt.Errorf("sociallog: %w", err)
	}
	l.next = from
	go l.read(apply)
	return l.wait(ctx, end)
}

// wait returns once the records below offset are applied.
func (l *Log) wait(ctx context.Context, offset int64) error {
	for {
		l.mu.Lock()
		next, reached, failure := l.next, l.reached, l.failure
		l.mu.Unlock()
		switch {
		case next >= offset:
			return nil
		case failure != nil:
			return failure
		}
		select {
		case <-reached:
		case <-l.dead:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// read applies the records until the log is closed or an apply fails.
func (l *Log) read(apply Apply) {
	defer close(l.done)
	for {
		fetches := l.cons.PollFetches(context.Background())
		if fetches.IsClientClosed() {
			l.stop(ErrStopped)
			return
		}
		if err := l.fetchErrors(fetches); err != nil {
			l.log.Error("cluster: reading the social log; the wallet stops", "err", err)
			l.stop(err)
			return
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			if r.Offset != l.nextOffset() {
				l.stop(cutBelow(l.topic, l.nextOffset()))
				return
			}
			out, err := apply(r.Offset, r.Value)
			if err != nil {
				l.log.Error("cluster: applying the social log; the wallet stops", "offset", r.Offset, "err", err)
				l.stop(err)
				return
			}
			l.applied(r, out)
			l.logRead.Add(1)
			l.maybeSnapshot(r)
		}
	}
}

// fetchErrors logs the errors of a fetch that retrying may cure, and
// returns one that it may not: the node's next record is no longer in
// the log.
func (l *Log) fetchErrors(fetches kgo.Fetches) error {
	var fatal error
	fetches.EachError(func(t string, p int32, err error) {
		if errors.Is(err, kerr.OffsetOutOfRange) {
			fatal = cutBelow(t, l.nextOffset())
			return
		}
		l.log.Warn("cluster: reading the social log", "topic", t, "partition", p, "err", err)
	})
	return fatal
}

// cutBelow is the error of a node whose next record was deleted: it lags
// more than a snapshot interval behind, and must start again, from the
// newest snapshot.
func cutBelow(topic string, next int64) error {
	return fmt.Errorf("sociallog: %s no longer holds record %d, which this node applies next (cut below a snapshot while the node lagged): restart the node", topic, next)
}

func (l *Log) nextOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// created returns the first error of resp other than an existing topic.
func created(resp kadm.CreateTopicResponses) error {
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return r.Err
		}
	}
	return nil
}

// applied hands r's outcome to its proposer, if it waits here, and moves
// the applied offset on.
func (l *Log) applied(r *kgo.Record, out any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ch := l.waiting[string(r.Key)]; ch != nil {
		select {
		case ch <- out:
		default: // a second record under one key (not written by Propose)
		}
	}
	l.next = r.Offset + 1
	close(l.reached)
	l.reached = make(chan struct{})
}

func (l *Log) stop(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failure == nil {
		l.failure = err
		close(l.dead)
	}
}

// Propose appends record and returns its outcome, once this node applied
// it.
func (l *Log) Propose(ctx context.Context, record []byte) (any, error) {
	key := l.prefix + strconv.FormatUint(l.seq.Add(1), 36)
	ch := make(chan any, 1)
	l.mu.Lock()
	if l.failure != nil {
		l.mu.Unlock()
		return nil, l.failure
	}
	l.waiting[key] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.waiting, key)
		l.mu.Unlock()
	}()
	r := &kgo.Record{Topic: l.topic, Partition: 0, Key: []byte(key), Value: record}
	if err := l.prod.ProduceSync(ctx, r).FirstErr(); err != nil {
		return nil, fmt.Errorf("sociallog: appending: %w", err)
	}
	select {
	case out := <-ch:
		return out, nil
	case <-l.dead:
		return nil, ErrStopped
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops applying and writing snapshots, and closes the
// connections.
func (l *Log) Close() {
	if l.cons != nil {
		l.cons.Close()
		<-l.done
	}
	l.stopBg()
	l.writers.Wait()
	l.prod.Close()
}
