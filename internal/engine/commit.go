package engine

import (
	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
)

// Committer makes a round durable somewhere other than the engine's own
// store: in a cluster (internal/cluster), the write of the round's changes
// to the partition's changelog takes the place of the round's fsync. When
// Config.Commit is set, each shard writes its own storage batch (the
// shard's changes, which the committer sends to the shard's changelog), the
// slices keep what they owe other shards (Forwarder) instead of receiving
// it from one another, and the engine applies the batches to its store
// without an fsync once Commit returns nil: the store is then a cache the
// committer's log can rebuild, and keeps no WAL.
type Committer interface {
	// Commit makes the round durable. An error fails the round as a failed
	// fsync does (see the package doc).
	Commit(r *Round) error
}

// Round is what a round leaves to its Committer.
type Round struct {
	// Batches holds each shard's storage batch, in shard order; the
	// Committer reads them and must not close them.
	Batches []*pebble.Batch
	// Forwards are the commands the round's slices owe other shards.
	Forwards []Forward
}

// Forward is a command a slice owes a shard, to be applied in a later round
// of that shard (the credit of a transfer between shards, in a cluster).
type Forward struct {
	Shard int
	Cmd   Command
	// From is the shard that owes it, which the engine sets: in a cluster
	// without transactions a forward goes out only once its source's
	// round is durable.
	From int
}

// Forwarder is a Slice that, under a Committer, leaves what it owes other
// shards as commands instead of having them Receive it.
type Forwarder interface {
	// Forwards appends the round's commands for other shards to dst.
	Forwards(dst []Forward) []Forward
}

// ShardIndex is the shard, of shards, that owns key: Engine.ShardOf for an
// engine of that many shards. A cluster's nodes route commands with it.
func ShardIndex(key string, shards int) int {
	return int(xxhash.Sum64String(key) % uint64(shards))
}

// commitElsewhere hands the round's per-shard batches and forwards to the
// Committer, then applies them to the store without an fsync.
func (e *Engine) commitElsewhere() error {
	r := Round{Batches: make([]*pebble.Batch, len(e.shards))}
	for i, s := range e.shards {
		r.Batches[i] = s.wb
		owed := len(r.Forwards)
		for _, sl := range s.slices {
			if f, ok := sl.(Forwarder); ok {
				r.Forwards = f.Forwards(r.Forwards)
			}
		}
		for j := owed; j < len(r.Forwards); j++ {
			r.Forwards[j].From = i
		}
	}
	err := e.refusal()
	if err == nil {
		err = e.cfg.Commit.Commit(&r)
	}
	for i, b := range r.Batches {
		if err == nil && i > 0 {
			err = r.Batches[0].Apply(b, nil)
		}
		if i > 0 {
			_ = b.Close()
		}
		e.shards[i].wb = nil
	}
	if err != nil {
		_ = r.Batches[0].Close()
		return err
	}
	return e.db.CommitNoSync(r.Batches[0])
}
