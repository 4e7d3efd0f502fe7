package calls

import (
	"bytes"
	"strconv"
	"testing"
)

// A command's key parses into its inbox and request id, a malformed one
// into nothing.
func TestReplyAddressParsesKeys(t *testing.T) {
	for _, c := range []struct {
		key   string
		inbox int32
		rid   string
		ok    bool
	}{
		{"3:n1-abc.1", 3, "n1-abc.1", true},
		{"0:", 0, "", true},
		{"12:a:b", 12, "a:b", true},
		{"2147483647:r", 2147483647, "r", true},
		{"2147483648:r", 0, "", false},
		{"99999999999:r", 0, "", false},
		{":r", 0, "", false},
		{"-1:r", 0, "", false},
		{"x1:r", 0, "", false},
		{"r", 0, "", false},
		{"", 0, "", false},
	} {
		inbox, rid, ok := ReplyAddress([]byte(c.key))
		if inbox != c.inbox || string(rid) != c.rid || ok != c.ok {
			t.Errorf("ReplyAddress(%q) = %d, %q, %v; want %d, %q, %v", c.key, inbox, rid, ok, c.inbox, c.rid, c.ok)
		}
	}
}

// The rounds parse the key of every command they apply, reply to and
// settle: a parse allocates nothing.
func TestReplyAddressAllocatesNothing(t *testing.T) {
	key := []byte("4:0a1b2c3d-1111-2222-3333-444455556666-k3j2h1.zz19")
	if n := testing.AllocsPerRun(100, func() { _, _, _ = ReplyAddress(key) }); n != 0 {
		t.Errorf("ReplyAddress allocates %v times", n)
	}
}

// A call's command carries the caller's inbox and a request id of its own.
func TestCallKeysCarryInboxAndRequestID(t *testing.T) {
	k := newCaller("n1", 7, nil)
	for seq := uint64(1); seq < 40; seq += 13 {
		inbox, rid, ok := ReplyAddress(k.key(seq))
		if !ok || inbox != 7 || !k.Mine(rid) || !bytes.HasSuffix(rid, []byte("."+strconv.FormatUint(seq, 36))) {
			t.Errorf("key of request %d: inbox %d, request id %q, %v", seq, inbox, rid, ok)
		}
	}
}
