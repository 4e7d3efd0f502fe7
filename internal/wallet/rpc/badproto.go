package rpc

import (
	"sync"

	"github.com/surge-dev/surge/internal/wallet/rpc/vtcodec"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// A request that is not protobuf is the client's fault, INVALID_ARGUMENT,
// as connect-go answers it on the Connect and gRPC-Web routes. grpc-go
// answers every codec error INTERNAL, and writes that status itself before
// the handler sees the error. So serverCodec decodes surge's own requests
// without failing: it keeps the error aside, the request empty, and the
// method's handler (bind.go) answers it with takeDecodeError.

// undecodable holds the decoding error of each request message serverCodec
// could not decode, until the method's handler takes it.
var undecodable sync.Map // message pointer → error

// ownMessage is a request of surge's services, which bind.go's handlers
// decode; others (health, reflection) fail in grpc-go's way.
type ownMessage interface{ UnmarshalVT([]byte) error }

// serverCodec is vtcodec.Server with its decoding errors kept aside.
type serverCodec struct{ vtcodec.Codec }

// Unmarshal decodes as vtcodec.Server does; a failure to decode one of
// surge's requests is kept for takeDecodeError.
func (c serverCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.Codec.Unmarshal(data, v)
	if _, own := v.(ownMessage); err == nil || !own {
		return err
	}
	undecodable.Store(v, err)
	return nil
}

// takeDecodeError returns the INVALID_ARGUMENT status of req if
// serverCodec could not decode it, and forgets it.
func takeDecodeError(req any) error {
	err, ok := undecodable.LoadAndDelete(req)
	if !ok {
		return nil
	}
	return status.Errorf(codes.InvalidArgument, "malformed protobuf message: %v", err)
}
