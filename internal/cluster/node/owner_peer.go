package node

import (
	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

// A command another node sends over a peer link (internal/cluster/peer),
// or a forward or answers of its rounds (Peers.Forward, no call waiting),
// is a local command of this node's: queued with the node's own, under
// the same rules (owner_local.go), its reply held until its partition's
// write counts and then sent back over the link. If the member does not
// write its partition (the partition moved) the node appends a command to
// the commands topic: its key carries the front node's inbox, where the
// partition's owner replies; a forward or answers it drops (takePeer).
// What the link cannot carry back goes through Kafka or fails the call:
// a reply a later round or another partition gives comes through the
// front node's inbox, and the front node is told so; a command of a round
// whose outcome is unknown is failed on the link; and a link that breaks
// fails, on the front node, every call in flight on it. A command still
// queued when the node stops, never applied, goes on to the commands
// topic (handOff) before the node closes its links.

// takePeer is the peers' Take. A forward or answers is queued under the
// queue's bound (forwardsBound), or dropped: past the bound, and for a
// partition the member does not write, since its source's Forwarder
// sends it again, to the partition's owner as its directory knows it
// then; appending it to the commands topic instead would cost a Kafka
// append and a goroutine per forward a peer sends, with no bound.
func (n *Node) takePeer(p int32, key, value []byte) bool {
	c := kafkalog.Command{Partition: p, Offset: -1, Key: key, Value: value}
	if kafkalog.IsForward(value) {
		return n.writes(p) && n.local.addForward(c)
	}
	if !n.writes(p) || !n.local.add(c) {
		n.goForward(c)
	}
	return true
}
