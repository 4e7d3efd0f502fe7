package front

import "net"

// GRPCServer serves whole connections of gRPC over HTTP/2: *grpc.Server.
type GRPCServer interface {
	Serve(net.Listener) error
	// GracefulStop stops accepting and waits for the calls in progress;
	// Stop ends them.
	GracefulStop()
	Stop()
}
