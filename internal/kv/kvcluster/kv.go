// Package kvcluster is the key-value entries as the clients of a surge
// cluster node see them (docs/CLUSTER.md): each call is a kvstore command
// to the partition owning its key, whose owner applies it in its rounds
// (kvstore.ClusterSlices); a range merges its pages from every partition.
package kvcluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/kv"
	"github.com/surge-dev/surge/internal/kv/kvstore"
)

// KV is the key-value entries as a node's clients see them (a
// kvapi.Store): each call is a command to the partition owning its key.
type KV struct {
	k          *calls.Caller
	partitions int
}

func (e *KV) do(ctx context.Context, c *kvstore.Command) (*kvstore.Command, error) {
	return e.doOn(ctx, engine.ShardIndex(c.Key, e.partitions), c)
}

// doOn sends c to partition and returns its outcome. A partition that did
// not answer is kv.ErrUnavailable.
func (e *KV) doOn(ctx context.Context, partition int, c *kvstore.Command) (*kvstore.Command, error) {
	out := kvstore.Command{Op: c.Op}
	decode := func(b []byte) error { return kvstore.DecodeOutcome(&out, b) }
	if err := e.k.CallWith(ctx, partition, kvstore.AppendCommand(calls.Command(calls.WorkloadKV), c), calls.EffectOf(c.Op.ReadOnly()), decode); err != nil {
		if errors.Is(err, calls.ErrUnavailable) {
			return nil, fmt.Errorf("%w: %w", kv.ErrUnavailable, err)
		}
		return nil, err
	}
	if out.Fault != "" {
		return nil, errors.New("cluster: " + out.Fault)
	}
	return &out, nil
}

// Get returns key's value appended to dst, or found false.
func (e *KV) Get(ctx context.Context, key string, dst []byte) (value []byte, found bool, err error) {
	out, err := e.do(ctx, &kvstore.Command{Op: kvstore.OpGet, Key: key})
	if err != nil {
		return nil, false, err
	}
	return append(dst, out.Value...), out.Found, nil
}

// PutNoWait stores value under key; it returns once the write is
// committed, so its Wait has nothing left to wait for.
func (e *KV) PutNoWait(ctx context.Context, key string, value []byte) (kv.Write, error) {
	_, err := e.do(ctx, &kvstore.Command{Op: kvstore.OpPut, Key: key, Value: value})
	return committed{}, err
}

// DeleteNoWait removes key, returning as PutNoWait does.
func (e *KV) DeleteNoWait(ctx context.Context, key string) (kv.Write, error) {
	_, err := e.do(ctx, &kvstore.Command{Op: kvstore.OpDelete, Key: key})
	return committed{}, err
}

// committed is a write its owner committed before answering.
type committed struct{}

// Wait returns at once: the write is durable.
func (committed) Wait() error { return nil }

// Scan opens the entries of [start, end) (end "": to the last key) in key
// order: it reads each partition's first page at once, then the next page
// of a partition when the merge has taken its last. Each page is as of its
// partition's round, so a range is not one snapshot of the cluster: an
// entry written while it runs may or may not be in it.
func (e *KV) Scan(ctx context.Context, start, end string) (kv.Entries, error) {
	r := &Range{kv: e, ctx: ctx, end: end, parts: make([]rangePart, e.partitions)}
	errs := make([]error, len(r.parts))
	var wg sync.WaitGroup
	for p := range r.parts {
		r.parts[p] = rangePart{partition: p, next: start, more: true}
		wg.Go(func() { errs[p] = r.fill(&r.parts[p]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// Range is a key range being read from every partition (a kv.Entries).
type Range struct {
	kv    *KV
	ctx   context.Context
	end   string
	parts []rangePart
	err   error
}

// rangePart is a partition's page being merged, and where its next starts.
type rangePart struct {
	partition int
	entries   []kvstore.Entry
	next      string
	more      bool
}

// fill reads p's next page if the merge took all of its last one.
func (r *Range) fill(p *rangePart) error {
	for len(p.entries) == 0 && p.more {
		out, err := r.kv.doOn(r.ctx, p.partition, &kvstore.Command{Op: kvstore.OpRange, Key: p.next, End: r.end})
		if err != nil {
			return err
		}
		p.entries, p.next, p.more = out.Entries, out.Next, out.More
	}
	return nil
}

// Next returns the least key of the partitions' pages, or ok false at the
// end of the range or if a partition failed (Err).
func (r *Range) Next() (key, value []byte, ok bool) {
	if r.err != nil {
		return nil, nil, false
	}
	best := -1
	for i := range r.parts {
		p := &r.parts[i]
		if r.err = r.fill(p); r.err != nil {
			return nil, nil, false
		}
		if len(p.entries) > 0 && (best < 0 || p.entries[0].Key < r.parts[best].entries[0].Key) {
			best = i
		}
	}
	if best < 0 {
		return nil, nil, false
	}
	e := r.parts[best].entries[0]
	r.parts[best].entries = r.parts[best].entries[1:]
	return []byte(e.Key), e.Value, true
}

// Err is why Next stopped early, if it did.
func (r *Range) Err() error { return r.err }

// Close ends the range; it holds nothing on the owners.
func (r *Range) Close() error { return nil }

// New is the key-value entries over calls sent with k to a cluster of
// partitions.
func New(k *calls.Caller, partitions int) *KV {
	return &KV{k: k, partitions: partitions}
}
