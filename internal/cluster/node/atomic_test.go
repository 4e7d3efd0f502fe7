package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
)

// An atomic batch across partitions, step by step on an owner whose
// forwarded commands wait in a queue: the test chooses when each is
// applied, rebuilds the owner from its changelog mid-protocol (a new owner
// takes the partitions) and applies every decision twice (a command read
// again).

// pending is a forwarded command not yet applied.
type pending struct {
	shard int
	value []byte
}

// batchRun is an atomic batch's commands in flight and the replies sent,
// on the owners of the partitions.
type batchRun struct {
	of      [testShards]*owner
	queue   []pending
	replies [][]byte
}

// on is the owner of shard.
func (r *batchRun) on(shard int) *owner { return r.of[shard] }

// split rebuilds the partitions' state on two new owners, one of
// partition 0 and one of the others, from the changelog alone: each
// knows only its own partitions' accounts.
func (r *batchRun) split() {
	changelog := r.of[0].changelog
	a, b := openOwnerOf(r.of[0].t, changelog, 0), openOwnerOf(r.of[0].t, changelog, 1, 2)
	r.of = [testShards]*owner{a, b, b}
}

// conserved fails unless the partitions' balances and credits in flight
// sum to 0.
func (r *batchRun) conserved(when string) {
	var sum int64
	for p := range testShards {
		st := do(r.on(p), p, &ledgerengine.Stats{}).Stats
		sum += st.Balances["USD"] + st.Credits.Sent["USD"] - st.Credits.Received["USD"]
	}
	if sum != 0 {
		r.of[0].t.Fatalf("%s: balances and credits in flight sum to %d", when, sum)
	}
}

// account reads id on its partition's owner.
func (r *batchRun) account(id string) ledger.Account {
	return r.on(engine.ShardIndex(id, testShards)).account(id)
}

// apply applies one command on shard, queues what the round forwarded and
// keeps its replies and changelog records.
func (r *batchRun) apply(shard int, value []byte, replyTo []byte) {
	o := r.on(shard)
	cmd, err := ledgerengine.Decode(value)
	if err != nil {
		o.t.Fatal(err)
	}
	if replyTo != nil {
		ledgerengine.SetReplyTo(cmd, replyTo)
	}
	for _, out := range o.apply(shard, cmd) {
		switch out.Kind {
		case kafkalog.Forward:
			r.queue = append(r.queue, pending{int(out.Partition), out.Value[1:]})
		case kafkalog.Reply:
			r.replies = append(r.replies, out.Value)
		}
	}
}

// next applies the oldest queued command, twice if it is a decision, and
// reports its op; 0 once the queue is empty.
func (r *batchRun) next() ledgerengine.Op {
	if len(r.queue) == 0 {
		return 0
	}
	p := r.queue[0]
	r.queue = r.queue[1:]
	op := ledgerengine.Op(p.value[0])
	r.apply(p.shard, p.value, nil)
	if op == ledgerengine.OpAtomicCommit || op == ledgerengine.OpAtomicAbort {
		r.apply(p.shard, p.value, nil)
	}
	return op
}

// startChain sends an atomic batch of items to its first partition as a
// front node would.
func startChain(o *owner, items ...ledger.TransferRequest) *batchRun {
	var chain []int
	for _, it := range items {
		for _, id := range []string{it.From, it.To} {
			if p := engine.ShardIndex(id, testShards); !contains(chain, p) {
				chain = append(chain, p)
			}
		}
	}
	b := ledgerengine.AtomicBatch{
		ID: "b1", Reqs: items, Currencies: map[string]string{}, Chain: chain,
		Results: make([]ledgerengine.WireResult, len(items)), Nows: make([]time.Time, len(chain)), Failed: -1,
	}
	for _, it := range items {
		b.Currencies[it.To] = "USD"
	}
	v, _ := ledgerengine.Encode(&ledgerengine.Atomic{Step: ledgerengine.OpAtomicPrepare, Batch: b})
	r := &batchRun{of: [testShards]*owner{o, o, o}}
	r.apply(chain[0], v, []byte("0:client"))
	return r
}

// reply decodes the batch's first reply.
func (r *batchRun) reply() *ledgerengine.Atomic {
	out := &ledgerengine.Atomic{Step: ledgerengine.OpAtomicPrepare}
	if err := ledgerengine.DecodeOutcome(out, r.replies[0]); err != nil {
		r.of[0].t.Fatalf("reply %q: %v", r.replies[0], err)
	}
	return out
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// fundedOwner opens an owner with a, b, c on partitions 0, 1, 2, each
// funded with 100.
func fundedOwner(t *testing.T) (*owner, []string) {
	o := openOwner(t, map[int32][]kafkalog.Output{})
	ids := []string{idIn("a", 0), idIn("b", 1), idIn("c", 2)}
	for _, id := range append([]string{ledger.WorldID}, ids...) {
		do(o, engine.ShardIndex(id, testShards), &ledgerengine.CreateAccount{Spec: ledger.AccountSpec{ID: id, Currency: "USD"}})
	}
	for _, id := range ids {
		req := ledger.TransferRequest{ID: "fund-" + id, From: ledger.WorldID, To: id, Amount: 100}
		do(o, engine.ShardIndex(ledger.WorldID, testShards), &ledgerengine.Transfer{Req: req, Currency: "USD"})
	}
	return o, ids
}

// account reads id on o.
func (o *owner) account(id string) ledger.Account {
	return do(o, engine.ShardIndex(id, testShards), &ledgerengine.ReadAccount{ID: id}).Account
}

// transferCode is the code of reading transfer id on shard.
func (o *owner) transferCode(shard int, id string) ledger.Code {
	out := do(o, shard, &ledgerengine.GetTransfer{ID: id})
	return ledger.CodeOf(out.Err)
}

// A committed batch: while prepared, its debits are held and nothing else
// shows, across an owner's rebuild too (holds and id claims come back from
// the changelog); each decision applied twice takes effect once; the
// client gets one reply; money is conserved at every step.
func TestAtomicChainCommitsOnceAcrossRebuilds(t *testing.T) {
	o, ids := fundedOwner(t)
	a, b, c := ids[0], ids[1], ids[2]
	r := startChain(o, item("x1", a, b, 60), item("x2", b, c, 150), item("x3", c, a, 10))
	if op := r.next(); op != ledgerengine.OpAtomicPrepare { // b's partition prepares
		t.Fatalf("second step: operation %d", op)
	}
	midway := func(when string) {
		// a holds x1's 60, b the 90 its steps take below its 100.
		if got := [4]int64{r.account(a).Balance, r.account(a).Pending, r.account(b).Balance, r.account(b).Pending}; got != [4]int64{100, 60, 100, 90} {
			t.Fatalf("%s: a's and b's balance and pending %v", when, got)
		}
		if code := r.on(0).transferCode(0, "x1"); code != ledger.CodeTransferNotFound {
			t.Fatalf("%s: x1 read as %q before the decision", when, code)
		}
		req := ledger.TransferRequest{ID: "x1", From: a, To: c, Amount: 1}
		out := do(r.on(0), 0, &ledgerengine.Transfer{Req: req, Currency: "USD"})
		if ledger.CodeOf(out.Err) != ledger.CodeIdempotencyConflict {
			t.Fatalf("%s: another transfer x1 while the batch holds the id: %+v", when, out.Err)
		}
		r.conserved(when)
	}
	midway("prepared on two partitions")
	r.split()
	midway("rebuilt while prepared, on two owners")
	for op := r.next(); op != 0; op = r.next() {
		r.conserved(fmt.Sprint("after operation ", op))
	}
	if len(r.replies) != 1 {
		t.Fatalf("%d replies", len(r.replies))
	}
	out := r.reply()
	if len(out.Results) != 3 {
		t.Fatalf("reply with %d results, want 3", len(out.Results))
	}
	for i, res := range out.Results {
		if res.Err != nil || res.Transfer.State != ledger.StatePosted {
			t.Fatalf("item %d: %+v", i, res)
		}
	}
	for id, want := range map[string][3]int64{a: {50, 0, 3}, b: {10, 0, 3}, c: {240, 0, 3}} {
		acc := r.account(id)
		if got := [3]int64{acc.Balance, acc.Pending, int64(acc.Entries)}; got != want {
			t.Fatalf("%s: balance, pending, entries %v, want %v", id, got, want)
		}
	}
}

// An aborted batch, one item failing on the last partition: the holds of
// the partitions that prepared are released, also when the abort is read
// twice and after a rebuild, and nothing of the batch shows anywhere.
func TestAtomicChainAbortLeavesNoTrace(t *testing.T) {
	o, ids := fundedOwner(t)
	a, b, c := ids[0], ids[1], ids[2]
	before := o.state(append(ids, ledger.WorldID))
	r := startChain(o, item("y1", a, b, 10), item("y2", b, c, 5), item("y3", c, a, 500))
	r.next() // b prepares
	r.split()
	for op := r.next(); op != 0; op = r.next() {
		r.conserved(fmt.Sprint("after operation ", op))
	}
	r.of = [testShards]*owner{openOwner(t, o.changelog)}
	r.of[1], r.of[2] = r.of[0], r.of[0]
	if after := r.on(0).state(append(ids, ledger.WorldID)); after != before {
		t.Fatalf("after the abort\n%s\nbefore\n%s", after, before)
	}
	for _, id := range []string{a, b} {
		if p := r.account(id).Pending; p != 0 {
			t.Fatalf("%s still holds %d", id, p)
		}
	}
	for i, id := range []string{"y1", "y2", "y3"} {
		if code := r.on(i).transferCode(i, id); code != ledger.CodeTransferNotFound {
			t.Fatalf("%s read as %q", id, code)
		}
	}
	if len(r.replies) != 1 {
		t.Fatalf("%d replies", len(r.replies))
	}
	if out := r.reply(); len(out.Results) != 3 ||
		out.Results[2].Err == nil || out.Results[2].Err.Code != ledger.CodeInsufficientFunds ||
		out.Results[0].Err == nil || out.Results[0].Err.Code != ledger.CodeBatchAborted {
		t.Fatalf("replies %q", r.replies)
	}
}
