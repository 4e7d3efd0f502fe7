package hpackw

import (
	"bytes"
	"testing"
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
