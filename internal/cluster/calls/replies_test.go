package calls

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

func TestRepliesPackPerInboxInOrder(t *testing.T) {
	big := bytes.Repeat([]byte("x"), kafkalog.PackLimit/3)
	outs := []kafkalog.Output{
		Reply(1, []byte("a"), []byte("ra")),
		{Kind: kafkalog.Change, Partition: 0, Key: []byte("k"), Value: []byte("v")},
		Reply(2, []byte("b"), []byte("rb")),
		Reply(1, []byte("c"), nil),
		{Kind: kafkalog.Forward, Partition: 3, Value: []byte("f")},
		Reply(1, []byte("d"), big),
		Reply(1, []byte("e"), big),
		Reply(1, []byte("f"), big), // over kafkalog.PackLimit with d and e: a second record
	}
	packed, held := PackReplies(outs, none)
	if len(held) != 0 {
		t.Fatalf("held %d replies of no local request", len(held))
	}
	if len(packed) != 5 || packed[0].Kind != kafkalog.Change || packed[1].Kind != kafkalog.Forward {
		t.Fatalf("packed into %d outputs: %+v", len(packed), packed)
	}
	var got []string
	for _, o := range packed[2:] {
		if o.Kind != kafkalog.Reply || len(o.Value) > kafkalog.PackLimit {
			t.Fatalf("packed reply record to %d: kind %d, %d bytes", o.Partition, o.Kind, len(o.Value))
		}
		err := UnpackReplies(o.Value, func(rid, r []byte) {
			got = append(got, fmt.Sprintf("%d:%s:%d", o.Partition, rid, len(r)))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := fmt.Sprint([]string{"1:a:2", "1:c:0", "1:d:174762", "1:e:174762", "2:b:2", "1:f:174762"})
	if fmt.Sprint(got) != want {
		t.Errorf("unpacked %v, want %v", got, want)
	}
}

func none([]byte) bool { return false }

func TestRepliesToLocalRequestsAreHeldNotPacked(t *testing.T) {
	k := &Caller{prefix: "n1-x."}
	outs := []kafkalog.Output{
		Reply(1, []byte("n1-x.1"), []byte("mine")),
		Reply(1, []byte("n10-1"), []byte("another node's, same inbox")),
		Reply(1, []byte("n1-x."), []byte("not a request id of n1")),
	}
	packed, held := PackReplies(outs, k.Mine)
	if len(held) != 1 || string(held[0].Key) != "n1-x.1" || string(held[0].Value) != "mine" {
		t.Fatalf("held %+v, want n1-x.1's reply alone", held)
	}
	var sent []string
	for _, o := range packed {
		if err := UnpackReplies(o.Value, func(rid, _ []byte) { sent = append(sent, string(rid)) }); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(sent) != "[n10-1 n1-x.]" {
		t.Errorf("packed %v, want [n10-1 n1-x.]", sent)
	}
}
