package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
)

// A command a node queued for its own rounds whose partition its member
// does not write (it moved after the node took the command) is not
// applied there: the round appends it to the commands topic, and the
// partition's owner applies it, once. Here node a takes every command
// locally, as if its member still wrote every partition.
func TestLocalCommandOfAMovedPartitionGoesThroughKafka(t *testing.T) {
	_, k := fakeKafka(t)
	a := startNode(t, k, t.TempDir())
	settled(t, a)
	ids := accounts(t, a, 6)
	b := joinNode(t, k, a)

	var src, dst string // src on b's partition, dst on a's
	for _, id := range ids {
		p := int32(engine.ShardIndex(id, fakePartitions))
		switch {
		case src == "" && slices.Contains(b.Owned(), p):
			src = id
		case dst == "" && slices.Contains(a.Owned(), p):
			dst = id
		}
	}
	if src == "" || dst == "" {
		t.Fatalf("no account on each node's partitions: a owns %v, b %v", a.Owned(), b.Owned())
	}
	var taken atomic.Int32
	a.caller.SetLocal(func(p int32, key, value []byte) bool {
		taken.Add(1)
		return a.local.add(kafkalog.Command{Partition: p, Offset: -1, Key: key, Value: value})
	})
	if _, _, err := a.Ledger().Transfer(context.Background(), ledger.TransferRequest{ID: "moved", From: src, To: dst, Amount: 5}); err != nil {
		t.Fatal(err)
	}
	if taken.Load() == 0 {
		t.Fatal("node a took no command locally")
	}
	a.caller.SetLocal(a.route)
	credited(t, b, dst, dst+"=1000 ")
	if got, want := balances(t, b, []string{src, dst}), fmt.Sprintf("%s=995 %s=1005 ", src, dst); got != want {
		t.Fatalf("after the transfer: %s, want %s", got, want)
	}
}

// The calls of a round's local commands whose write did not count are
// never left waiting: a round that surely wrote nothing of theirs (not
// applied, or fenced) puts them back for the next round, which applies
// and answers them; one whose write's outcome is unknown fails them,
// since they may have counted; one refused (its partition owes too much)
// fails them as overloaded.
func TestUncommittedLocalCommandsAreRetakenOrFailed(t *testing.T) {
	a, ids, held, transferVia := holdingNode(t)

	unknown := transferVia("unknown")
	c := <-held
	(&localRound{n: a.Node, taken: []kafkalog.Command{c}}).settle(map[int32]kafkalog.Result{c.Partition: kafkalog.Unknown}, nil, nil)
	if err := <-unknown; ledger.CodeOf(err) != ledger.CodeOverloaded || !strings.Contains(err.Error(), errUnknownOutcome.Error()) {
		t.Fatalf("call of a round whose outcome is unknown: %v, want %s: %v", err, ledger.CodeOverloaded, errUnknownOutcome)
	}
	refused := transferVia("refused")
	c = <-held
	(&localRound{n: a.Node, taken: []kafkalog.Command{c}}).settle(map[int32]kafkalog.Result{c.Partition: kafkalog.Counted}, nil, []kafkalog.Command{c})
	if err := <-refused; ledger.CodeOf(err) != ledger.CodeOverloaded || !strings.Contains(err.Error(), calls.ErrOverloaded.Error()) {
		t.Fatalf("call of a refused command: %v, want %s: %v", err, ledger.CodeOverloaded, calls.ErrOverloaded)
	}

	void := transferVia("void")
	fenced := true
	for waiting := true; waiting; {
		select {
		case c := <-held: // the transfer, or a read it makes first
			results := map[int32]kafkalog.Result{} // not applied
			if fenced {
				results[c.Partition] = kafkalog.Fenced
			}
			fenced = !fenced
			(&localRound{n: a.Node, taken: []kafkalog.Command{c}}).settle(results, nil, nil)
		case err := <-void:
			if err != nil {
				t.Fatalf("call of a round that surely did not commit: %v, want it applied by the next round", err)
			}
			waiting = false
		}
	}
	a.caller.SetLocal(a.route)
	if got, want := balances(t, a, ids), fmt.Sprintf("%s=990 %s=1010 ", ids[0], ids[1]); got != want {
		t.Fatalf("after the transfers: %s, want %s (void once, unknown and refused never)", got, want)
	}
}

// A node's own request refused when read from the commands topic is
// failed only once its partition's write counts: after a write that does
// not count it is read again, and may be applied.
func TestPolledRefusalFailsOnlyOnceItsWriteCounts(t *testing.T) {
	a, _, held, transferVia := holdingNode(t)
	polled := func(id string) (kafkalog.Command, []byte, chan error) {
		done := transferVia(id)
		c := <-held
		c.Offset = 7 // as read from the commands topic
		_, rid, _ := calls.ReplyAddress(c.Key)
		return c, rid, done
	}
	c, rid, done := polled("not-counted")
	for _, r := range []kafkalog.Result{kafkalog.Unknown, kafkalog.Fenced} {
		(&localRound{n: a.Node}).settle(map[int32]kafkalog.Result{c.Partition: r}, nil, []kafkalog.Command{c})
	}
	sentinel := errors.New("still waiting")
	a.failCall(rid, sentinel)
	if err := <-done; !strings.Contains(fmt.Sprint(err), sentinel.Error()) {
		t.Fatalf("call of a polled refusal whose write did not count: %v, want it still waiting", err)
	}
	c, _, done = polled("counted")
	(&localRound{n: a.Node}).settle(map[int32]kafkalog.Result{c.Partition: kafkalog.Counted}, nil, []kafkalog.Command{c})
	if err := <-done; ledger.CodeOf(err) != ledger.CodeOverloaded || !strings.Contains(err.Error(), calls.ErrOverloaded.Error()) {
		t.Fatalf("call of a polled refusal whose write counted: %v, want %s: %v", err, ledger.CodeOverloaded, calls.ErrOverloaded)
	}
	a.caller.SetLocal(a.route)
}

// holdingNode starts a node with two accounts whose local commands are
// held (not queued) for the test to settle, and returns how to start a
// transfer of 10 between them, whose call's outcome comes on the channel.
func holdingNode(t *testing.T) (*testNode, []string, chan kafkalog.Command, func(id string) chan error) {
	t.Helper()
	_, k := fakeKafka(t)
	a := startNode(t, k, t.TempDir())
	settled(t, a)
	ids := accounts(t, a, 2)
	held := make(chan kafkalog.Command, 1)
	a.caller.SetLocal(func(p int32, key, value []byte) bool {
		held <- kafkalog.Command{Partition: p, Offset: -1, Key: key, Value: value}
		return true
	})
	transferVia := func(id string) chan error {
		done := make(chan error, 1)
		go func() {
			_, _, err := a.Ledger().Transfer(context.Background(), ledger.TransferRequest{ID: id, From: ids[0], To: ids[1], Amount: 10})
			done <- err
		}()
		return done
	}
	return a, ids, held, transferVia
}
