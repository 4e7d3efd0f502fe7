package hpackw

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// TestAppendInt checks RFC 7541's own examples (C.1): 10 and 1337 in a
// 5-bit prefix, 42 at an octet boundary.
func TestAppendInt(t *testing.T) {
	for _, tt := range []struct {
		first byte
		n     uint
		v     uint64
		want  []byte
	}{
		{0xe0, 5, 10, []byte{0xea}},
		{0, 5, 1337, []byte{0x1f, 0x9a, 0x0a}},
		{0, 8, 42, []byte{0x2a}},
		{0, 7, 127, []byte{0x7f, 0x00}},
	} {
		if got := AppendInt(nil, tt.first, tt.n, tt.v); !bytes.Equal(got, tt.want) {
			t.Errorf("AppendInt(%#x, %d, %d) = %x, want %x", tt.first, tt.n, tt.v, got, tt.want)
		}
	}
}

func TestAppendString(t *testing.T) {
	if got := AppendString([]byte{1}, "custom-key"); !bytes.Equal(got, append([]byte{1, 0x0a}, "custom-key"...)) {
		t.Errorf("AppendString = %x", got)
	}
}

// TestAppendIntPrefixBoundaries checks values about each prefix's 2^N-1
// and the 7-bit continuation's boundaries, byte for byte.
func TestAppendIntPrefixBoundaries(t *testing.T) {
	for _, tt := range []struct {
		n    uint
		v    uint64
		want []byte
	}{
		{4, 14, []byte{0x0e}},
		{4, 15, []byte{0x0f, 0x00}},
		{4, 16, []byte{0x0f, 0x01}},
		{5, 30, []byte{0x1e}},
		{5, 31, []byte{0x1f, 0x00}},
		{5, 31 + 127, []byte{0x1f, 0x7f}},
		{5, 31 + 128, []byte{0x1f, 0x80, 0x01}},
		{6, 63, []byte{0x3f, 0x00}},
		{7, 126, []byte{0x7e}},
		{7, 127 + 16383, []byte{0x7f, 0xff, 0x7f}},
		{7, 127 + 16384, []byte{0x7f, 0x80, 0x80, 0x01}},
		{8, 254, []byte{0xfe}},
		{8, 255, []byte{0xff, 0x00}},
	} {
		if got := AppendInt(nil, 0, tt.n, tt.v); !bytes.Equal(got, tt.want) {
			t.Errorf("AppendInt(%d-bit prefix, %d) = %x, want %x", tt.n, tt.v, got, tt.want)
		}
	}
}

// TestAppendIntDecodes has x/net's decoder read the integers back: a
// dynamic table size update (a 5-bit prefix) of v is accepted when the
// decoder allows v and refused when it allows v-1, which it can only do
// if it read exactly v.
func TestAppendIntDecodes(t *testing.T) {
	for _, v := range []uint64{1, 30, 31, 32, 158, 159, 4096, 16414, 16415, 1 << 21} {
		b := AppendInt(nil, 0x20, 5, v)
		d := hpack.NewDecoder(4096, nil)
		d.SetAllowedMaxDynamicTableSize(uint32(v))
		if _, err := d.DecodeFull(b); err != nil {
			t.Errorf("%d as %x: %v", v, b, err)
		}
		d = hpack.NewDecoder(4096, nil)
		d.SetAllowedMaxDynamicTableSize(uint32(v - 1))
		if _, err := d.DecodeFull(b); err == nil {
			t.Errorf("%d as %x read as at most %d", v, b, v-1)
		}
	}
}

// TestAppendStringDecodes has x/net's decoder read back literals whose
// lengths sit about the 7-bit prefix's boundaries.
func TestAppendStringDecodes(t *testing.T) {
	for _, n := range []int{0, 1, 126, 127, 128, 254, 16510, 16511, 70000} {
		value := strings.Repeat("v", n)
		b := AppendString(AppendString([]byte{0}, "x-name"), value) // literal, new name
		fields, err := hpack.NewDecoder(4096, nil).DecodeFull(b)
		if err != nil || len(fields) != 1 || fields[0].Name != "x-name" || fields[0].Value != value {
			t.Errorf("a value of %d bytes: %v %d fields", n, err, len(fields))
		}
	}
}
