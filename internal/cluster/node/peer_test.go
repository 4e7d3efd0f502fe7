package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/cluster/peer"
	"github.com/surge-dev/surge/internal/engine"
)

// withPeers gives a node peer links on loopback, their metrics in reg.
func withPeers(reg *prometheus.Registry) func(*Config) {
	return func(c *Config) { c.Peer = &peer.Config{Listen: "127.0.0.1:0", Registerer: reg} }
}

// peerAnswers is the node's count of answers of kind answer that came
// over its peer links.
func peerAnswers(t *testing.T, reg *prometheus.Registry, answer string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "surge_cluster_peer_answers_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == answer {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// onPartitionsOf returns two of ids whose partitions n owns.
func onPartitionsOf(t *testing.T, n *testNode, ids []string) (string, string) {
	t.Helper()
	var on []string
	for _, id := range ids {
		if slices.Contains(n.Owned(), int32(engine.ShardIndex(id, fakePartitions))) {
			on = append(on, id)
		}
	}
	if len(on) < 2 {
		t.Fatalf("fewer than 2 of %v on partitions %v", ids, n.Owned())
	}
	return on[0], on[1]
}

// A transfer node a receives between accounts of node b's partitions goes
// to b over their peer link once a knows b's partitions (from the nodes
// topic), and b's reply comes back over it: money moves once each time.
func TestCommandsGoOverPeerLinks(t *testing.T) {
	_, k := fakeKafka(t)
	regA := prometheus.NewRegistry()
	a := startNode(t, k, t.TempDir(), withPeers(regA))
	settled(t, a)
	ids := accounts(t, a, 12)
	b := joinNode(t, k, a, withPeers(prometheus.NewRegistry()))
	src, dst := onPartitionsOf(t, b, ids)
	n := 0
	for ; n < 500 && peerAnswers(t, regA, "reply") == 0; n++ {
		transfer(t, a, fmt.Sprint("t", n), src, dst, 1)
	}
	if peerAnswers(t, regA, "reply") == 0 {
		t.Fatalf("no reply came over the peer link in %d transfers", n)
	}
	if got, want := balances(t, a, []string{src, dst}), fmt.Sprintf("%s=%d %s=%d ", src, 1000-n, dst, 1000+n); got != want {
		t.Fatalf("after %d transfers: %s, want %s", n, got, want)
	}
}

// A command a peer sends to a node whose member does not take its
// partition goes on to the commands topic, and its owner's reply reaches
// the front node through its inbox. Here node a hands every command to
// node b as if over a link, those of a's partitions too.
func TestPeerCommandOfAnotherPartitionGoesThroughKafka(t *testing.T) {
	_, k := fakeKafka(t)
	a := startNode(t, k, t.TempDir())
	settled(t, a)
	ids := accounts(t, a, 12)
	b := joinNode(t, k, a)
	src, _ := onPartitionsOf(t, a, ids)
	dst, _ := onPartitionsOf(t, b, ids)
	a.caller.SetLocal(func(p int32, key, value []byte) bool {
		b.takePeer(p, key, value)
		return true
	})
	transfer(t, a, "there", src, dst, 7)
	transfer(t, a, "back", dst, src, 2)
	a.caller.SetLocal(a.route)
	credited(t, a, src, fmt.Sprintf("%s=993 ", src))
	if got, want := balances(t, a, []string{src, dst}), fmt.Sprintf("%s=995 %s=1005 ", src, dst); got != want {
		t.Fatalf("after the transfers: %s, want %s", got, want)
	}
}
