// Package engine runs surge's shards in rounds, and knows no workload.
//
// A workload (the ledger, ticketing) keeps its state sliced by shard: one
// Slice per shard, each owning the keys that hash to it (ShardOf). The
// workload hands its slices to the engine once (Attach) and queues its
// commands through the Port it gets back: each command goes to the log of
// the shard that owns its key. The engine owns the rest: the logs, the
// rounds, the round's storage batch and its fsync, publishing, and the
// replies.
//
// # The round
//
// One goroutine runs rounds while any log holds commands. A round is:
//
//  1. Apply. Every shard whose log holds commands reads up to MaxBatch of
//     them and hands each workload its own, in log order:
//     Slice.Apply(cmds, now). The shards apply in parallel, each on its
//     own goroutine, so Apply touches its own slice only. A Tick among the
//     commands reaches every slice of the shard: a deadline it asked for
//     (Finish) has passed.
//  2. Hand over. Every shard parked, each slice receives what the other
//     shards' Apply left for it (Slice.Receive: the credits of transfers
//     between shards). Then the commands that need every shard at once run
//     (Port.Exclusive).
//  3. Write. Each slice adds what the round changed to the round's storage
//     batch (Slice.Write); the engine commits the batch with one fsync.
//  4. Publish. The round is durable: each slice shows it to readers
//     (Slice.Publish, while Consistent readers are held off, so they see
//     whole rounds), then, once every slice has, tells those waiting for it
//     (Slice.Announce).
//  5. Reply. Every call of the round completes; each slice readies itself
//     for the next round and says when it next needs a Tick
//     (Slice.Finish).
//
// Steps 2 to 4 are each slice's own work too. In a round whose slices
// report a Size of ParallelSize or more in all, they run on the shards'
// goroutines, all at once, each writing a storage batch of its own that
// the engine appends into one before the fsync; a smaller round runs them
// one shard after another on the round's goroutine, since a hand-off costs
// two goroutine wake-ups.
//
// # The contract
//
//   - A command is plain data the workload defines (a pointer, so that
//     Apply can write the command's outcome into it). Its caller reads the
//     outcome once its Call completes: after the round is durable and
//     published.
//   - Apply is deterministic given the slice's state, the commands and the
//     round's time: applying never fails the round. An outcome the client
//     must hear (insufficient funds) is part of the command's outcome.
//   - The engine calls a slice from one goroutine at a time, and only
//     within a round; between rounds the slice's state holds still, except
//     what Publish made visible to readers, which they read concurrently.
//   - A commit that fails ends the engine's writes, not the process: the
//     slices are ahead of the disk and cannot be rolled back, so every call
//     of that round and every later command gets the store's fault, nothing
//     of the round is published, and readers keep the last published round.
//     The workloads rebuild their state from storage when the process starts
//     again (the CLI restarts it in place once the disk takes writes).
//
// # Elsewhere than the store
//
// With a Committer (Config.Commit) step 3 changes and nothing else does:
// each shard writes a batch of its own, and the Committer makes the round
// durable (a cluster node writes each shard's changes, with the commands
// its slices owe other shards, Forwarder, to the shard's changelog); the
// store then takes the batches without an fsync, as a cache. The engine
// knows no Kafka: internal/cluster implements the Committer.
//
// A workload reads its state back from storage (Store) after Open and
// before Start; after Start, only rounds change it.
package engine
