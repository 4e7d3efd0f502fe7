package node

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"testing"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/changelog"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/store"
)

const testShards = 3

// owner is an owner's engine and ledger whose changelog and forwarded
// credits stay in memory: the rounds of a node without Kafka.
type owner struct {
	t         *testing.T
	eng       *engine.Engine
	led       *ledgerengine.Ledger
	commit    *committer
	changelog map[int32][]kafkalog.Output
}

// openOwner opens an owner of every partition, replaying changelog into
// it first.
func openOwner(t *testing.T, changelog map[int32][]kafkalog.Output) *owner {
	return openOwnerOf(t, changelog, 0, 1, 2)
}

// openOwnerOf opens an owner that replays only the changelog of parts, as
// a node owning those partitions restores them.
func openOwnerOf(t *testing.T, changelog map[int32][]kafkalog.Output, parts ...int32) *owner {
	dir := replayed(t, changelog, parts...)
	o := &owner{t: t, commit: &committer{}, changelog: changelog}
	var err error
	o.eng, err = engine.Open(engine.Config{Dir: dir, Shards: testShards, Commit: o.commit, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.eng.Close() })
	o.led, err = ledgerengine.Open(o.eng, ledgerengine.Config{Cluster: true, SweepEntries: 16, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	o.eng.Start()
	return o
}

// replayed returns a new store directory holding the changelog records of
// parts in records.
func replayed(t *testing.T, records map[int32][]kafkalog.Output, parts ...int32) string {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(dir, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := db.NewBatch()
	for _, p := range parts {
		for _, o := range records[p] {
			if err := changelog.Replay(b, nil, o.Key, o.Value); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.CommitNoSync(b); err != nil {
		t.Fatal(err)
	}
	return dir
}

// do applies c on shard, then keeps the round's changelog records and
// applies the credits it forwarded, as their partitions' owners would; c
// travels there and its outcome back as on the wire.
func do[C ledgerengine.Command](o *owner, shard int, c C) C {
	v, err := ledgerengine.Encode(c)
	if err != nil {
		o.t.Fatal(err)
	}
	cmd, err := ledgerengine.Decode(v)
	if err != nil {
		o.t.Fatal(err)
	}
	o.run(shard, cmd)
	if err := ledgerengine.DecodeOutcome(c, ledgerengine.Outcome(cmd)); err != nil {
		o.t.Fatalf("%T: %v", c, err)
	}
	noFault(o.t, c)
	return c
}

// noFault fails t if c's outcome is a server fault, not a domain error.
func noFault(t *testing.T, c ledgerengine.Command) {
	t.Helper()
	f := reflect.ValueOf(c).Elem().FieldByName("Err")
	if !f.IsValid() || f.IsNil() {
		return
	}
	if err := f.Interface().(error); ledger.CodeOf(err) == "" {
		t.Fatalf("%T: a fault: %v", c, err)
	}
}

// apply runs cmd on shard, keeps the changelog records of its round and
// returns the round's other outputs.
func (o *owner) apply(shard int, cmd engine.Command) []kafkalog.Output {
	call, err := o.led.Submit(context.Background(), shard, cmd)
	if err == nil {
		err = call.Wait(context.Background())
	}
	if err != nil {
		o.t.Fatal(err)
	}
	var rest []kafkalog.Output
	for _, out := range o.commit.take() {
		if out.Kind == kafkalog.Change {
			o.changelog[out.Partition] = append(o.changelog[out.Partition], out)
		} else {
			rest = append(rest, out)
		}
	}
	return rest
}

// run applies cmd on shard and, at once, the commands its round forwards.
func (o *owner) run(shard int, cmd engine.Command) {
	for _, out := range o.apply(shard, cmd) {
		if out.Kind != kafkalog.Forward {
			continue
		}
		fwd, err := ledgerengine.Decode(out.Value[1:])
		if err != nil {
			o.t.Fatal(err)
		}
		o.run(int(out.Partition), fwd)
	}
}

// state reads every account and each shard's stats.
func (o *owner) state(accounts []string) string {
	s := ""
	for _, id := range accounts {
		a := do(o, engine.ShardIndex(id, testShards), &ledgerengine.ReadAccount{ID: id}).Account
		h := do(o, engine.ShardIndex(id, testShards), &ledgerengine.History{ID: id, Query: ledger.HistoryQuery{Limit: 1000}}).Page
		s += fmt.Sprintf("%s %d %d %d;", id, a.Balance, a.Entries, len(h.Entries))
	}
	for p := range testShards {
		st := do(o, p, &ledgerengine.Stats{}).Stats
		s += fmt.Sprintf("%d %v %v %v;", p, st.Balances, st.Credits.Sent, st.Credits.Received)
	}
	return s
}

// An owner rebuilt from the changelog alone has the state the rounds left,
// history included, across sweeps that chunk and trim the journal, and
// goes on from it; balances plus credits in flight stay 0.
func TestOwnerRebuildsFromItsChangelog(t *testing.T) {
	var accounts []string
	o := openOwner(t, map[int32][]kafkalog.Output{})
	for i := range 8 {
		id := fmt.Sprint("a", i)
		accounts = append(accounts, id)
		do(o, engine.ShardIndex(id, testShards), &ledgerengine.CreateAccount{Spec: ledger.AccountSpec{ID: id, Currency: "USD"}})
	}
	do(o, engine.ShardIndex(ledger.WorldID, testShards), &ledgerengine.CreateAccount{Spec: ledger.AccountSpec{ID: ledger.WorldID, Currency: "USD"}})
	transfers := func(o *owner, from, n int) {
		for i := from; i < from+n; i++ {
			src, dst := accounts[i%8], accounts[(i*3+1)%8]
			if src == dst {
				continue
			}
			if i%100 < 8 {
				src = ledger.WorldID
			}
			req := ledger.TransferRequest{ID: fmt.Sprint("t", i), From: src, To: dst, Amount: int64(1000 - i)}
			out := do(o, engine.ShardIndex(src, testShards), &ledgerengine.Transfer{Req: req, Currency: "USD"})
			if out.Err != nil && ledger.CodeOf(out.Err) != ledger.CodeInsufficientFunds {
				t.Fatalf("transfer %d: %v", i, out.Err)
			}
		}
	}
	// Rebuilt after many rounds, after a few (the journal of the first
	// incarnation not yet trimmed), and after many again.
	for i, n := range []int{60, 3, 60} {
		transfers(o, 100*i, n)
		want := o.state(accounts)
		o = openOwner(t, o.changelog)
		if got := o.state(accounts); got != want {
			t.Fatalf("owner rebuilt %d times:\n%s\nwant\n%s", i+1, got, want)
		}
	}
}

// rounds runs a node's rounds (Node.apply) over every partition, with the
// topics kept in memory: the commands waiting, the changelog, and the
// replies each request id got. A round that does not commit drops the
// node's state, which is rebuilt from the changelog, and leaves its
// commands to be read again, as when an owner dies mid-round. The node's
// state holds every partition; the commands a round owes them go through
// the commands waiting.
type rounds struct {
	t         *testing.T
	n         *Node
	st        *state
	waiting   []kafkalog.Command
	changelog map[int32][]kafkalog.Output
	replies   map[string][][]byte
	seq       int
}

func newRounds(t *testing.T) *rounds {
	r := &rounds{t: t, changelog: map[int32][]kafkalog.Output{}, replies: map[string][][]byte{}}
	r.n = &Node{cfg: Config{Kafka: kafkalog.Config{Partitions: testShards}, MaxBatch: 64, Currency: "USD", Logger: slog.New(slog.DiscardHandler)}}
	r.rebuild()
	t.Cleanup(func() { r.st.close() })
	return r
}

// rebuild drops the node's state and restores it from the changelog.
func (r *rounds) rebuild() {
	r.st.close()
	var err error
	if r.st, err = r.n.open(replayed(r.t, r.changelog, 0, 1, 2), 0); err != nil {
		r.t.Fatal(err)
	}
}

// send appends a client's command for partition, of workload w, and
// returns its request id.
func (r *rounds) send(partition int, w byte, cmd any) string {
	r.seq++
	rid := fmt.Sprint("req", r.seq)
	v, err := ledgerengine.Encode(cmd)
	if _, ledgerCmd := cmd.(ledgerengine.Command); !ledgerCmd {
		v, err = json.Marshal(cmd)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	r.waiting = append(r.waiting, kafkalog.Command{Partition: int32(partition), Key: []byte("0:" + rid), Value: append([]byte{w}, v...)})
	return rid
}

// round applies the commands waiting; commit false aborts it.
func (r *rounds) round(commit bool) {
	batch := r.waiting
	outs, err := r.n.apply(r.st)(context.Background(), batch)
	if err != nil {
		r.t.Fatal(err)
	}
	if !commit {
		r.rebuild()
		return
	}
	r.waiting = r.waiting[len(batch):]
	for _, o := range outs {
		switch o.Kind {
		case kafkalog.Change:
			r.changelog[o.Partition] = append(r.changelog[o.Partition], o)
		case kafkalog.Forward:
			r.waiting = append(r.waiting, kafkalog.Command{Partition: o.Partition, Key: o.Key, Value: o.Value})
		case kafkalog.Reply:
			r.replies[string(o.Key)] = append(r.replies[string(o.Key)], o.Value)
		}
	}
}

// settle runs rounds until no command waits, each aborted once first if
// abort.
func (r *rounds) settle(abort bool) {
	for len(r.waiting) > 0 {
		if abort {
			r.round(false)
		}
		r.round(true)
	}
}

// ledgerCall sends c to partition, settles the rounds and decodes c's
// only reply into c.
func ledgerCall[C ledgerengine.Command](r *rounds, partition int, c C) C {
	r.t.Helper()
	rid := r.send(partition, calls.WorkloadLedger, c)
	r.settle(false)
	if len(r.replies[rid]) != 1 {
		r.t.Fatalf("request %s has %d replies, want 1", rid, len(r.replies[rid]))
	}
	if err := ledgerengine.DecodeOutcome(c, r.replies[rid][0]); err != nil {
		r.t.Fatal(err)
	}
	noFault(r.t, c)
	return c
}

func (r *rounds) balance(id string) int64 {
	return ledgerCall(r, part(id), &ledgerengine.ReadAccount{ID: id}).Account.Balance
}

func part(key string) int { return engine.ShardIndex(key, testShards) }

// A round owes every credit as a forwarded command, to a partition the
// node owns as to another's: the two partitions' writes are not atomic
// together, so a credit applied in the debit's round could count while
// the debit does not. Each credit is applied once, by a later round,
// across an aborted attempt, and money is conserved.
func TestRoundOwesEveryCreditAsAForward(t *testing.T) {
	r := newRounds(t)
	from, mine, theirs := idIn("a", 0), idIn("b", 1), idIn("c", 2)
	for _, id := range []string{ledger.WorldID, from, mine, theirs} {
		ledgerCall(r, part(id), &ledgerengine.CreateAccount{Spec: ledger.AccountSpec{ID: id, Currency: "USD"}})
	}
	fund := ledger.TransferRequest{ID: "fund", From: ledger.WorldID, To: from, Amount: 100}
	ledgerCall(r, part(ledger.WorldID), &ledgerengine.Transfer{Req: fund, Currency: "USD"})
	for i, to := range []string{mine, theirs} {
		req := ledger.TransferRequest{ID: fmt.Sprint("t", i), From: from, To: to, Amount: int64(10 + i)}
		r.send(part(from), calls.WorkloadLedger, &ledgerengine.Transfer{Req: req, Currency: "USD"})
	}
	r.round(false)
	r.round(true)
	if len(r.waiting) != 2 || r.waiting[0].Partition != 1 || r.waiting[1].Partition != 2 {
		t.Fatalf("after the round, waiting %+v; want the credits owed to partitions 1 and 2", r.waiting)
	}
	r.settle(false)
	for id, want := range map[string]int64{from: 100 - 10 - 11, mine: 10, theirs: 11} {
		if got := r.balance(id); got != want {
			t.Errorf("%s's balance %d, want %d", id, got, want)
		}
	}
	var sum int64
	for p := range testShards {
		st := ledgerCall(r, p, &ledgerengine.Stats{}).Stats
		sum += st.Balances["USD"] + st.Credits.Sent["USD"] - st.Credits.Received["USD"]
	}
	if sum != 0 {
		t.Errorf("balances and credits in flight sum to %d, want 0", sum)
	}
}
