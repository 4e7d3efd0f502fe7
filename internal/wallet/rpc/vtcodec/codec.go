// Package vtcodec is grpc-go's "proto" codec through the code
// protoc-gen-go-vtproto generates for surge's messages (make proto), which
// encodes and decodes without reflection.
//
// grpc-go's default codec walks a message by reflection and checks every
// string for UTF-8 as it encodes and decodes it. Encoding a page of history
// that way was a sixth of GetHistory's server CPU, and decoding it a
// quarter of the load generator's (pprof);
// the generated code encodes in a fifth of the time and decodes in two
// thirds (BenchmarkEncodeHistoryPage, BenchmarkDecodeHistoryPage).
//
// vtprotobuf ships a codec of its own, but for grpc-go's older interface
// and without a fallback for the messages it has no code for (health,
// reflection), hence this one.
package vtcodec

import (
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the fallback codec
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// vtMessage is a message with generated code.
type vtMessage interface {
	proto.Message
	SizeVT() int
	MarshalToSizedBufferVT(dst []byte) (int, error)
	UnmarshalVT(src []byte) error
}

// Codec encodes surge's messages with their generated code and everything
// else with grpc-go's default codec.
type Codec struct {
	// TrustInput decodes with the generated code too. That code does not
	// check that strings are UTF-8, as proto3 requires, so it is for
	// clients of a server they trust, such as the load generator. Without
	// it, every message is decoded by the default codec, which checks: a
	// server's requests are small, and a server must refuse bad ones.
	TrustInput bool
}

// Server is the codec surge's gRPC server uses. Every string it replies
// with was checked when it came in (requests through this codec,
// social.ValidName and ValidText, the HTTP API's scanner).
var Server = Codec{}

// fallback is grpc-go's default codec, the one Codec replaces.
var fallback = encoding.GetCodecV2(Codec{}.Name())

// Name is the content-subtype Codec serves, the same as the default codec's.
func (Codec) Name() string { return "proto" }

// Marshal encodes v into one buffer, from grpc-go's pool when it is large
// enough to be worth pooling, as the default codec does.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMessage)
	if !ok {
		return fallback.Marshal(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVT(buf); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBufferVT((*buf)[:size]); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// Unmarshal decodes data into v, replacing what v held.
func (c Codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(vtMessage)
	if !ok || !c.TrustInput {
		return fallback.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	// The generated decoder merges into what m holds, and it copies every
	// string and byte field out of buf.
	proto.Reset(m)
	return m.UnmarshalVT(buf.ReadOnlyData())
}
