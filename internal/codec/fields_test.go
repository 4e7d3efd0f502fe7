package codec

import (
	"errors"
	"reflect"
	"testing"
	"time"
	"unsafe"
)

type sample struct {
	s  string
	b  []byte
	ok bool
	n  int
	u  uint32
	t  time.Time
}

func (x *sample) carry(f *Fields) {
	f.Str(&x.s)
	f.Bytes(&x.b)
	f.Bool(&x.ok)
	f.Int(&x.n)
	f.Uint32(&x.u)
	f.Time(&x.t)
}

// One list of fields encodes and decodes a message; a message cut short,
// followed by more, or of an operation its reader does not take is refused.
func TestFieldsRoundTripAndRefusals(t *testing.T) {
	in := sample{s: "s", b: []byte{0, 1}, ok: true, n: -7, u: 300, t: time.Unix(5, 6).UTC()}
	b := EncodeOp(9, in.carry)
	var out sample
	op, err := DecodeOp(b, func(op byte, f *Fields) bool { out.carry(f); return op == 9 })
	if err != nil || op != 9 || !reflect.DeepEqual(out, in) {
		t.Fatalf("decoded %d %+v, %v; want %+v", op, out, err, in)
	}
	for n := range len(b) {
		if _, err := DecodeOp(b[:n], func(_ byte, f *Fields) bool { new(sample).carry(f); return true }); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d of %d bytes: %v, want ErrCorrupt", n, len(b), err)
		}
	}
	if _, err := DecodeOp(append(b, 0), func(_ byte, f *Fields) bool { new(sample).carry(f); return true }); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a trailing byte: %v, want ErrCorrupt", err)
	}
	if _, err := DecodeOp(b, func(byte, *Fields) bool { return false }); !errors.Is(err, ErrUnknownOp) {
		t.Errorf("an operation not taken: %v, want ErrUnknownOp", err)
	}
	if err := DecodeAs(b, 8, new(sample).carry); !errors.Is(err, ErrUnknownOp) {
		t.Errorf("a message of another operation: %v, want ErrUnknownOp", err)
	}
	f := &Fields{D: &Decoder{B: []byte{0x7e}}} // a count of 63, with nothing after it
	if n := f.Count(0); n != 0 || f.D.Err == nil {
		t.Errorf("a count past the bytes left gave %d, %v", n, f.D.Err)
	}
}

// A message's Fields and its Encoder or Decoder are one allocation: a
// cluster's calls encode and decode four messages each.
func TestMessageFieldsAllocateOnce(t *testing.T) {
	x := sample{s: "s", n: 7}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { AppendOp(buf[:0], 1, func(f *Fields) { f.Int(&x.n) }) }); n != 1 {
		t.Errorf("AppendOp allocates %v times, want 1", n)
	}
	msg := AppendOp(nil, 1, func(f *Fields) { f.Int(&x.n) })
	if n := testing.AllocsPerRun(100, func() { _ = DecodeAs(msg, 1, func(f *Fields) { f.Int(&x.n) }) }); n != 1 {
		t.Errorf("DecodeAs allocates %v times, want 1", n)
	}
}

// A string read as one known is that string when the bytes equal it, with
// nothing allocated, and a copy of the bytes otherwise.
func TestStrAsReusesOnlyAnEqualString(t *testing.T) {
	known := "acct-0000173"
	msg := AppendString(AppendString(nil, known), "acct-0000402")
	d := Decoder{B: msg}
	if got := d.StrAs(known); got != known || unsafe.StringData(got) != unsafe.StringData(known) {
		t.Errorf("equal bytes read as %q, not the known string itself", got)
	}
	if got := d.StrAs(known); got != "acct-0000402" {
		t.Errorf("other bytes read as %q, want acct-0000402", got)
	}
	if n := testing.AllocsPerRun(100, func() { d := Decoder{B: msg}; d.StrAs(known) }); n != 0 {
		t.Errorf("reading a known string allocates %v times", n)
	}
}
