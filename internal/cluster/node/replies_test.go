package node

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
)

func TestRepliesPackPerInboxInOrder(t *testing.T) {
	big := bytes.Repeat([]byte("x"), packLimit/3)
	outs := []kafkalog.Output{
		reply(1, []byte("a"), []byte("ra")),
		{Kind: kafkalog.Change, Partition: 0, Key: []byte("k"), Value: []byte("v")},
		reply(2, []byte("b"), []byte("rb")),
		reply(1, []byte("c"), nil),
		{Kind: kafkalog.Forward, Partition: 3, Value: []byte("f")},
		reply(1, []byte("d"), big),
		reply(1, []byte("e"), big),
		reply(1, []byte("f"), big), // over packLimit with d and e: a second record
	}
	packed := packReplies(outs)
	if len(packed) != 5 || packed[0].Kind != kafkalog.Change || packed[1].Kind != kafkalog.Forward {
		t.Fatalf("packed into %d outputs: %+v", len(packed), packed)
	}
	var got []string
	for _, o := range packed[2:] {
		if o.Kind != kafkalog.Reply || len(o.Value) > packLimit {
			t.Fatalf("packed reply record to %d: kind %d, %d bytes", o.Partition, o.Kind, len(o.Value))
		}
		err := unpackReplies(o.Value, func(rid string, r []byte) {
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

func TestUnpackRefusesATruncatedRecord(t *testing.T) {
	v := packReplies([]kafkalog.Output{reply(0, []byte("rid"), []byte("reply"))})[0].Value
	for n := 1; n < len(v); n++ {
		if err := unpackReplies(v[:n], func(string, []byte) {}); err == nil {
			t.Errorf("%d of %d bytes unpacked without an error", n, len(v))
		}
	}
}
