// Package httpc is the load lab's HTTP client: HTTPClient and Endpoint
// send requests, reusing request bodies and reply buffers, and count the
// bytes on the wire.
//
// By default they use a lean HTTP/1.1 client (fastclient.go,
// fastparse.go): one connection per VU, driven by the VU's own goroutine,
// or, with Pipeline, several VUs pipelining on one connection
// (pipeclient.go). net/http's Transport is the other choice (StdClient),
// for https and for comparison.
package httpc
