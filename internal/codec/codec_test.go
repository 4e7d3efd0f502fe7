package codec

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// Fields read back in the order written, and bytes left over are an error.
func TestRoundTrip(t *testing.T) {
	b := binary.AppendUvarint(nil, 300)
	b = binary.AppendVarint(b, -7)
	b = append(b, 0xfe)
	b = AppendBool(b, true)
	b = AppendString(b, "surge")
	b = AppendString(b, "")
	d := Decoder{B: b}
	if u, v, c, ok, s, e := d.Uvarint(), d.Varint(), d.Byte(), d.Bool(), d.Str(), d.Str(); u != 300 || v != -7 || c != 0xfe || !ok || s != "surge" || e != "" {
		t.Fatalf("read %d %d %#x %v %q %q", u, v, c, ok, s, e)
	}
	if err := d.Done(); err != nil {
		t.Fatalf("Done: %v", err)
	}
	d = Decoder{B: append(b, 0)}
	d.Uvarint()
	if err := d.Done(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bytes left over: %v", err)
	}
}

// The first field that does not decode fails the record, and every read
// after it returns a zero value.
func TestFailureIsSticky(t *testing.T) {
	b := AppendString(nil, "abc")
	for _, cut := range []int{0, 1, 2, 3} { // a length without all its bytes
		d := Decoder{B: b[:cut]}
		if s := d.Str(); s != "" || !errors.Is(d.Err, ErrCorrupt) {
			t.Fatalf("cut at %d: %q, %v", cut, s, d.Err)
		}
		if d.Byte() != 0 || d.Uvarint() != 0 || d.Varint() != 0 || d.Bool() || len(d.B) != 0 || !errors.Is(d.Done(), ErrCorrupt) {
			t.Fatalf("cut at %d: reads after a failure returned values", cut)
		}
	}
	// A length beyond the record is refused, not read past.
	d := Decoder{B: []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 'x'}}
	if d.Bytes() != nil || !errors.Is(d.Err, ErrCorrupt) {
		t.Fatal("a length beyond the record read")
	}
}

// A time reads back as the same instant in UTC, and the zero time as zero.
func TestTimeRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 28, 1, 2, 3, 4, time.FixedZone("x", 3600))
	var e Encoder
	e.Time(at)
	e.Time(time.Time{})
	d := Decoder{B: e.B}
	if got, zero := d.Time(), d.Time(); !got.Equal(at) || got.Location() != time.UTC || !zero.IsZero() || d.Done() != nil {
		t.Fatalf("read %v and %v (%v)", got, zero, d.Err)
	}
}
