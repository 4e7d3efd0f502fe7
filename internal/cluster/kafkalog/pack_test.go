package kafkalog

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A packer fills a partition's record up to PackMax entries or PackLimit
// bytes, and unpacked gives back every entry in order, with its record's
// partition and offset.
func TestPackerKeepsOrderAndLimits(t *testing.T) {
	pk := newPacker("t")
	var want []string
	for i := range PackMax + 3 {
		k := fmt.Appendf(nil, "k%d", i)
		pk.add(int32(i%2), k, k)
		want = append(want, fmt.Sprintf("%d:%s", i%2, k))
	}
	big := bytes.Repeat([]byte("x"), PackLimit/2)
	pk.add(5, []byte("a"), big)
	pk.add(5, []byte("b"), big) // over PackLimit with a: a record of its own
	if len(pk.records) != 4 {
		t.Fatalf("%d records, want 2 for partitions 0 and 1 and 2 for the big entries", len(pk.records))
	}
	var got []string
	for off, r := range pk.records {
		r.Offset = int64(off)
		err := unpacked(r, func(c Command) {
			if c.Offset != r.Offset || c.Partition != r.Partition {
				t.Errorf("command %s at %d/%d, its record at %d/%d", c.Key, c.Partition, c.Offset, r.Partition, r.Offset)
			}
			if c.Partition != 5 {
				got = append(got, fmt.Sprintf("%d:%s", c.Partition, c.Key))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Each partition's entries in order; partition 0's first, as its record came first.
	var even, odd []string
	for _, w := range want {
		if w[0] == '0' {
			even = append(even, w)
		} else {
			odd = append(odd, w)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(append(even, odd...)) {
		t.Errorf("unpacked %v, want %v", got, append(even, odd...))
	}
}

// A record without the packed header is one command, as written.
func TestAnUnpackedRecordIsOneCommand(t *testing.T) {
	var got []Command
	r := &kgo.Record{Partition: 2, Offset: 9, Key: []byte("k"), Value: []byte("v")}
	if err := unpacked(r, func(c Command) { got = append(got, c) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || string(got[0].Key) != "k" || string(got[0].Value) != "v" || got[0].Offset != 9 {
		t.Errorf("got %+v", got)
	}
}

// A truncated packed value is an error, never a shorter list of entries.
func TestUnpackRefusesATruncatedValue(t *testing.T) {
	v := AppendEntry(AppendEntry(nil, []byte("rid"), []byte("reply")), nil, []byte("x"))
	for n := 1; n < len(v); n++ {
		if n == len(AppendEntry(nil, []byte("rid"), []byte("reply"))) {
			continue // a whole first entry
		}
		if err := Unpack(v[:n], func(_, _ []byte) {}); err == nil {
			t.Errorf("%d of %d bytes unpacked without an error", n, len(v))
		}
	}
}
