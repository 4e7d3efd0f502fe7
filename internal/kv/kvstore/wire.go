package kvstore

import (
	"fmt"
	"slices"

	"github.com/surge-dev/surge/internal/codec"
)

// A Command on the wire between cluster nodes (internal/codec): its Op byte
// and the operation's arguments; its outcome, the Op byte again and the
// operation's outcome fields.
//
//	operation  arguments   outcome
//	get        key         fault, found, value
//	put        key, value  fault
//	delete     key         fault
//	range      key, end    fault, entries (count, then key and value each), more, next

// EncodeCommand encodes c's operation and arguments.
func EncodeCommand(c *Command) []byte { return AppendCommand(nil, c) }

// AppendCommand appends c encoded as EncodeCommand encodes it to dst,
// which it grows once, if it must, to hold all of it.
func AppendCommand(dst []byte, c *Command) []byte {
	e := codec.Encoder{B: slices.Grow(dst, 8+len(c.Key)+len(c.Value)+len(c.End))}
	e.Byte(byte(c.Op))
	e.String(c.Key)
	switch c.Op {
	case OpPut:
		e.String(string(c.Value))
	case OpRange:
		e.String(c.End)
	}
	return e.B
}

// DecodeCommand decodes a command EncodeCommand encoded.
func DecodeCommand(b []byte) (*Command, error) {
	d := codec.Decoder{B: b}
	c := &Command{Op: Op(d.Byte())}
	if !c.Op.known() {
		return nil, fmt.Errorf("kvstore: unknown operation %d", c.Op)
	}
	c.Key = d.Str()
	switch c.Op {
	case OpPut:
		c.Value = append([]byte{}, d.Bytes()...)
	case OpRange:
		c.End = d.Str()
	}
	if err := d.Done(); err != nil {
		return nil, fmt.Errorf("kvstore: decoding operation %d: %w", c.Op, err)
	}
	return c, nil
}

// EncodeOutcome encodes c's outcome, after c's Op byte: never empty.
func EncodeOutcome(c *Command) []byte {
	size := 8 + len(c.Fault) + len(c.Value) + len(c.Next)
	for _, en := range c.Entries {
		size += 8 + len(en.Key) + len(en.Value)
	}
	e := codec.Encoder{B: make([]byte, 0, size)}
	e.Byte(byte(c.Op))
	e.String(c.Fault)
	switch c.Op {
	case OpGet:
		e.Bool(c.Found)
		e.String(string(c.Value))
	case OpRange:
		e.Uvarint(uint64(len(c.Entries)))
		for _, en := range c.Entries {
			e.String(en.Key)
			e.String(string(en.Value))
		}
		e.Bool(c.More)
		e.String(c.Next)
	}
	return e.B
}

// DecodeOutcome decodes an outcome EncodeOutcome encoded into c, the
// command it answers.
func DecodeOutcome(c *Command, b []byte) error {
	d := codec.Decoder{B: b}
	if op := Op(d.Byte()); op != c.Op && d.Err == nil {
		return fmt.Errorf("kvstore: an outcome of operation %d, not %d", op, c.Op)
	}
	c.Fault = d.Str()
	switch c.Op {
	case OpGet:
		c.Found = d.Bool()
		c.Value = append([]byte{}, d.Bytes()...)
	case OpRange:
		c.Entries = decodeEntries(&d)
		c.More = d.Bool()
		c.Next = d.Str()
	}
	if err := d.Done(); err != nil {
		return fmt.Errorf("kvstore: decoding the outcome of operation %d: %w", c.Op, err)
	}
	return nil
}

// decodeEntries reads a page's entries; a count the bytes left cannot
// hold (two bytes an entry at least) is corrupt, not allocated.
func decodeEntries(d *codec.Decoder) []Entry {
	n := d.Uvarint()
	if n > uint64(len(d.B)/2) {
		d.Fail()
		return nil
	}
	out := make([]Entry, n)
	for i := range out {
		out[i].Key = d.Str()
		out[i].Value = append([]byte{}, d.Bytes()...)
	}
	return out
}

func (o Op) known() bool { return o >= OpGet && o <= OpRange }
