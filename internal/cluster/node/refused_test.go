package node

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/cluster/calls"
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/engine"
	"github.com/surge-dev/surge/internal/ledger"
)

// A command its owner refuses because its partition owes another as many
// forwards as its limits allow is answered as overloaded, as the owner's
// own requests are, whichever way another node's request came: read from
// the commands topic or taken over a peer link. Node b's partitions may
// owe one forward each; a transfer from b's partition to a's owes one,
// which stays unacknowledged while a's writes of its partition are held.
// A call left unanswered ends with the caller's own timeout
// (calls.Timeout), not the overload.
func TestRefusalAnswersAnotherNodesRequestAsOverloaded(t *testing.T) {
	kc, k := fakeKafka(t)
	regA := prometheus.NewRegistry()
	a := startNode(t, k, t.TempDir(), withPeers(regA))
	settled(t, a)
	ids := accounts(t, a, 12)
	b := joinNode(t, k, a, withPeers(prometheus.NewRegistry()),
		func(c *Config) { c.Kafka.ForwardLimits = kafkalog.Limits{Forwards: 1} })
	src, _ := onPartitionsOf(t, b, ids)
	dst, _ := onPartitionsOf(t, a, ids)
	ps, pd := int32(engine.ShardIndex(src, fakePartitions)), int32(engine.ShardIndex(dst, fakePartitions))
	owes := func() int {
		bk, _ := b.owner.Book(ps)
		return len(bk.Owed())
	}
	until(t, func() bool {
		_, _ = a.Ledger().Account(context.Background(), src)
		return peerAnswers(t, regA, "reply") > 0 && owes() == 0
	}, func() string {
		return fmt.Sprintf("no reply over the peer link yet, or partition %d owes %d forwards", ps, owes())
	})

	released := holdWrites(t, kc, k, pd, func() bool { return true })
	transfer(t, a, "owed", src, dst, 5)
	until(t, func() bool { return owes() > 0 }, func() string { return fmt.Sprintf("partition %d owes nothing", ps) })

	var linked atomic.Int32
	for _, way := range []struct {
		name  string
		local func(p int32, key, value []byte) bool
	}{
		{"commands topic", func(int32, []byte, []byte) bool { return false }},
		{"peer link", func(p int32, key, value []byte) bool {
			sent := a.peers.Send(p, key, value)
			if sent {
				linked.Add(1)
			}
			return sent
		}},
	} {
		a.caller.SetLocal(way.local)
		_, _, err := a.Ledger().Transfer(context.Background(), ledger.TransferRequest{ID: "refused " + way.name, From: src, To: dst, Amount: 1})
		if ledger.CodeOf(err) != ledger.CodeOverloaded || !strings.Contains(fmt.Sprint(err), calls.ErrOverloaded.Error()) {
			t.Errorf("another node's request over the %s to a partition owing too much: %v, want %s: %v", way.name, err, ledger.CodeOverloaded, calls.ErrOverloaded)
		}
	}
	a.caller.SetLocal(a.route)
	if linked.Load() == 0 {
		t.Error("the peer link's request went through the commands topic")
	}

	released()
	until(t, func() bool { return owes() == 0 }, func() string { return fmt.Sprintf("partition %d owes %d forwards", ps, owes()) })
	if got, want := balances(t, a, []string{src, dst}), fmt.Sprintf("%s=995 %s=1005 ", src, dst); got != want {
		t.Fatalf("after one transfer applied and two refused: %s, want %s", got, want)
	}
}
