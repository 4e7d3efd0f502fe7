package kvstore

import (
	"bytes"
	"reflect"
	"testing"
)

// Each operation's arguments, and its outcome, come back as they left;
// the fields an operation does not carry stay empty.
func TestWireCarriesEachOperationsFields(t *testing.T) {
	cases := []struct{ sent, answered Command }{
		{Command{Op: OpGet, Key: "k"}, Command{Op: OpGet, Key: "k", Found: true, Value: []byte("v")}},
		{Command{Op: OpGet, Key: "absent"}, Command{Op: OpGet, Key: "absent", Value: []byte{}}},
		{Command{Op: OpPut, Key: "k", Value: []byte{0, 0xff, '{'}}, Command{Op: OpPut, Key: "k"}},
		{Command{Op: OpPut, Key: "empty", Value: []byte{}}, Command{Op: OpPut, Key: "empty", Fault: "disk"}},
		{Command{Op: OpDelete, Key: "k"}, Command{Op: OpDelete, Key: "k"}},
		{Command{Op: OpRange, Key: "a", End: "b"}, Command{Op: OpRange, Key: "a", End: "b",
			Entries: []Entry{{Key: "a1", Value: []byte("x")}, {Key: "a2", Value: []byte{}}}, More: true, Next: "a2\x00"}},
		{Command{Op: OpRange, Key: "", End: ""}, Command{Op: OpRange, Entries: []Entry{}}},
	}
	for _, c := range cases {
		got, err := DecodeCommand(EncodeCommand(&c.sent))
		if err != nil {
			t.Fatalf("%+v: %v", c.sent, err)
		}
		if c.sent.Op == OpPut && !bytes.Equal(got.Value, c.sent.Value) || got.Key != c.sent.Key || got.End != c.sent.End || got.Op != c.sent.Op {
			t.Errorf("sent %+v, decoded %+v", c.sent, *got)
		}
		answer := Command{Op: c.sent.Op, Key: c.sent.Key, End: c.sent.End}
		if err := DecodeOutcome(&answer, EncodeOutcome(&c.answered)); err != nil {
			t.Fatalf("%+v: %v", c.answered, err)
		}
		if !reflect.DeepEqual(answer, c.answered) {
			t.Errorf("answered %+v, decoded %+v", c.answered, answer)
		}
	}
}

// A command of the JSON wire, an unknown operation, a truncated command
// and an outcome of another operation are refused, not guessed at.
func TestWireRefusesWhatItDidNotWrite(t *testing.T) {
	put := EncodeCommand(&Command{Op: OpPut, Key: "key", Value: []byte("value")})
	for name, b := range map[string][]byte{
		"json":      []byte(`{"op":"put","key":"k","value":"dg=="}`),
		"unknown":   {99, 0},
		"empty":     {},
		"truncated": put[:len(put)-1],
		"trailing":  append(append([]byte{}, put...), 0),
	} {
		if c, err := DecodeCommand(b); err == nil {
			t.Errorf("%s: decoded %+v", name, *c)
		}
	}
	get := Command{Op: OpGet, Key: "k"}
	if err := DecodeOutcome(&get, EncodeOutcome(&Command{Op: OpDelete})); err == nil {
		t.Error("a delete's outcome decoded as a get's")
	}
	page := Command{Op: OpRange}
	huge := []byte{byte(OpRange), 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if err := DecodeOutcome(&page, huge); err == nil || len(page.Entries) != 0 {
		t.Errorf("a page claiming 4G entries in 7 bytes: err %v, %d entries", err, len(page.Entries))
	}
}

// A command appended after a cluster call's workload byte is that byte,
// then the command as EncodeCommand encodes it.
func TestAppendCommandFollowsWhatIsThere(t *testing.T) {
	for _, c := range []Command{
		{Op: OpGet, Key: "k"},
		{Op: OpPut, Key: "k", Value: bytes.Repeat([]byte{'v'}, 300)},
		{Op: OpRange, Key: "a", End: "b"},
	} {
		got := AppendCommand(append(make([]byte, 0, 4), 'k'), &c)
		if want := append([]byte{'k'}, EncodeCommand(&c)...); !bytes.Equal(got, want) {
			t.Errorf("%+v: appended %q, want %q", c, got, want)
		}
	}
}
