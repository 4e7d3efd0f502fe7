package kafkalog

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/surge-dev/surge/internal/cluster/kafkatest"
)

// appendRaw appends records to the changelog as they are, on a client of
// its own: the copy of a batch a reset producer sent again, or a record
// no writer makes.
func appendRaw(t *testing.T, ctx context.Context, c Config, records ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// A write whose gap holds a record of the writer's own epoch before
// another owner's claim (a batch of its own that landed again, sent anew
// by a reset producer after it had counted), or a record that does not
// decode, has an unknown outcome: judged fenced, a write that counted
// would be taken for one that never did.
func TestWriterGapOfItsOwnRecordsIsUnknown(t *testing.T) {
	ctx, c := newCluster(t, 2)
	a, b := newWriter(t, c), newWriter(t, c)
	topic := c.ChangelogTopic()

	ea := claimOn(t, ctx, a, 0, "a")
	appendRaw(t, ctx, c, ChangeRecord(topic, 0, ea, []byte("k"), []byte("again")), TrailerRecord(topic, 0, Trailer{Epoch: ea, Commands: 1}))
	if _, err := b.Claim(ctx, 0, Claim{Generation: 2, Member: "b"}); err != nil {
		t.Fatal(err)
	}
	own, err := a.Write(ctx, []Batch{batchOf(0, "a", 1)})
	if err != nil {
		t.Fatal(err)
	}
	if own[0].Valid || !errors.Is(own[0].Err, ErrOwnRecordInGap) {
		t.Fatalf("a write after a copy of the writer's own batch and another's claim: %+v", own[0])
	}

	claimOn(t, ctx, a, 1, "a")
	appendRaw(t, ctx, c, &kgo.Record{Topic: topic, Partition: 1, Key: []byte("bad"), Headers: []kgo.RecordHeader{{Key: epochHeader}}, Value: []byte{0x80}})
	bad, err := a.Write(ctx, []Batch{batchOf(1, "a", 1)})
	if err != nil {
		t.Fatal(err)
	}
	if bad[0].Valid || !errors.Is(bad[0].Err, ErrBadRecord) {
		t.Fatalf("a write after a record that does not decode: %+v", bad[0])
	}
	for p := range c.Partitions {
		if _, ok := a.Epoch(p); ok {
			t.Fatalf("the writer still writes partition %d after a write of unknown outcome", p)
		}
	}
}

// Answered OUT_OF_ORDER_SEQUENCE_NUMBER, franz-go would take a new
// producer epoch and send the batch again, which may have landed already:
// the writer stops instead, the write's outcome unknown, and goes on with
// a new client, whose claim and write count.
func TestWriterStopsOnDataLoss(t *testing.T) {
	kc, ctx, c := fakeCluster(t, 1)
	w := newWriter(t, c)
	claimOn(t, ctx, w, 0, "a")
	kc.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		return kafkatest.RefusedProduce(kreq.(*kmsg.ProduceRequest), kerr.OutOfOrderSequenceNumber.Code), nil, true
	})
	out, err := w.Write(ctx, []Batch{batchOf(0, "lost", 1)})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Valid || !errors.Is(out[0].Err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("a write answered OUT_OF_ORDER_SEQUENCE_NUMBER: %+v", out[0])
	}
	claimOn(t, ctx, w, 0, "a")
	next := batchOf(0, "next", 1)
	if o := writeRound(t, ctx, w, next)[0]; !o.Valid {
		t.Fatalf("the write after a new claim: %+v", o)
	}
	entries, counts, _ := readChangelog(t, ctx, c, 0)
	if got, want := countedKeys(entries, counts), keysOf(next); !slices.Equal(got, want) {
		t.Fatalf("the changelog counts %q, want %q", got, want)
	}
}

// A write whose partition's produce the broker holds (its leader gone)
// ends with its context, its outcome unknown, and holds no later write
// of another partition: each write waits for its own records.
func TestWriterPartitionsTroubleHoldsNoOtherWrite(t *testing.T) {
	kc, ctx, c := fakeCluster(t, 2)
	w := newWriter(t, c)
	claimOn(t, ctx, w, 0, "a")
	claimOn(t, ctx, w, 1, "a")
	held, release := make(chan struct{}, 1), make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the writer closes
	kc.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		for _, rt := range kreq.(*kmsg.ProduceRequest).Topics {
			if slices.ContainsFunc(rt.Partitions, func(p kmsg.ProduceRequestTopicPartition) bool { return p.Partition == 0 }) {
				select {
				case held <- struct{}{}:
				default: // a retry of the held write
				}
				kc.SleepControl(func() { <-release })
			}
		}
		return nil, nil, false
	})
	stuck, cancel := context.WithCancel(ctx)
	done := make(chan []Written, 1)
	go func() {
		out, _ := w.Write(stuck, []Batch{batchOf(0, "stuck", 1)})
		done <- out
	}()
	<-held
	cancel()
	if out := <-done; out == nil || out[0].Err == nil {
		t.Fatalf("the held write: %+v", out)
	}
	if o := writeRound(t, ctx, w, batchOf(1, "free", 1))[0]; !o.Valid {
		t.Fatalf("the other partition's write: %+v", o)
	}
}

// An owner's claim whose produce the broker holds past the Take's context
// lands after the owner's next claim of the same term, taking the
// partition from it: the owner's next write does not count, and its
// outcome is unknown (ErrOwnClaimInGap), not fenced, since no other owner
// claimed. The owner takes the partition again and goes on.
func TestOwnerTakesAgainAfterItsOwnLateClaim(t *testing.T) {
	kc, ctx, c := fakeCluster(t, 1)
	s := newShard()
	o := newOwner(t, c, s)
	held, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // before the cluster closes
	produces := 0
	kc.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		if produces++; produces == 1 { // the first Take's claim
			close(held)
			kc.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	who := Claim{Generation: 1, Member: "a"}
	noop := func(_, _ []byte) error { return nil }
	first, cancel := context.WithCancel(ctx)
	failed := make(chan error, 1)
	go func() {
		_, err := o.Take(first, 0, LogStart(), who, noop)
		failed <- err
	}()
	<-held
	cancel()
	if err := <-failed; err == nil {
		t.Fatal("the Take whose claim the broker held took the partition")
	}
	tk := take(t, ctx, o, s, 0, LogStart(), "a")

	free()
	pollUntil(t, ctx, func() bool {
		entries, _, _ := readChangelog(t, ctx, c, 0)
		return epochRecords(t, entries) == 2 && entries[len(entries)-1].Kind == KindEpoch
	}, "the held claim landed after the owner's next one")
	out := round(t, ctx, o, s, Batch{Partition: 0, Updates: []Update{upd("k", "lost")}, Commands: 1})
	if out.Result != Unknown || !errors.Is(out.Written.Err, ErrOwnClaimInGap) {
		t.Fatalf("the write after the owner's own late claim (its claim at %d): %+v", tk.Epoch, out)
	}
	take(t, ctx, o, s, 0, LogStart(), "a")
	if out := round(t, ctx, o, s, Batch{Partition: 0, Updates: []Update{upd("k", "kept")}, Commands: 1}); out.Result != Counted {
		t.Fatalf("the write after taking the partition again: %+v", out)
	}
}

// recordBuffered tells of each record a client's Produce takes.
type recordBuffered func(r *kgo.Record)

func (f recordBuffered) OnProduceRecordBuffered(r *kgo.Record) { f(r) }

// A writer's client produces a write's records only once it knows their
// partitions (knowPartitions): franz-go partitions a record produced
// before its topic's metadata came on the goroutine that stores the
// metadata, where a flush under way may miss it and leave it lingering
// flushLinger. A fresh writer's first metadata request is held: no record
// of its claim is produced meanwhile, and the claim lands once the
// metadata is answered.
func TestWriterProducesOnceItKnowsThePartitions(t *testing.T) {
	kc, ctx, c := fakeCluster(t, 1)
	var mu sync.Mutex
	var produced []int32
	w, err := NewWriter(c, kgo.WithHooks(recordBuffered(func(r *kgo.Record) {
		mu.Lock()
		defer mu.Unlock()
		produced = append(produced, r.Partition)
	})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	held, release := make(chan struct{}), make(chan struct{})
	var holding atomic.Bool
	kc.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		asks := slices.ContainsFunc(kreq.(*kmsg.MetadataRequest).Topics, func(rt kmsg.MetadataRequestTopic) bool {
			return rt.Topic != nil && *rt.Topic == c.ChangelogTopic()
		})
		if asks && holding.CompareAndSwap(false, true) {
			kc.SleepControl(func() { close(held); <-release })
		}
		return nil, nil, false
	})
	claimed := make(chan error, 1)
	go func() {
		_, err := w.Claim(ctx, 0, Claim{Generation: 1, Member: "a"})
		claimed <- err
	}()
	awaitClosed(t, ctx, held, "the writer asked for no metadata")
	mu.Lock()
	early := slices.DeleteFunc(slices.Clone(produced), func(p int32) bool { return p < 0 })
	mu.Unlock()
	close(release)
	if len(early) > 0 {
		t.Errorf("the writer produced records to partitions %v before it knew them", early)
	}
	if err := <-claimed; err != nil {
		t.Fatal(err)
	}
}

// A write to a topic the brokers do not have fails with their error at
// the probe that learns the partitions, rather than producing its
// records into a second wait for the same topic.
func TestProbeOfAMissingTopicReportsTheBrokersError(t *testing.T) {
	_, ctx, c := fakeCluster(t, 1)
	cl, err := kgo.NewClient(append(producing(), kgo.SeedBrokers(c.Brokers...))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	err = knowPartitions(ctx, cl, []*kgo.Record{{Topic: "local.missing", Partition: 0}})
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("probe of a missing topic: %v, want %v", err, kerr.UnknownTopicOrPartition)
	}
}
