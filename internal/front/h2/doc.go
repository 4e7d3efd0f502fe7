// Package h2 is surge's HTTP/2 server (RFC 9113, with RFC 7541's HPACK),
// built on golang.org/x/net/http2's Framer and hpack. The front serves
// with it every HTTP/2 connection that is not gRPC's (--http2-server).
//
// # Why not net/http's
//
// An empty net/http HTTP/2 server costs about as much CPU per request as
// all of surge's reservation work: per stream it starts a goroutine,
// passes the request and each write through its connection goroutine
// over channels, and schedules frames through a write scheduler. This
// server reads, runs and writes with no hand-off but the handler's
// goroutine and one writer, and so costs a reservation less CPU than
// net/http's does: A/B pairs of one binary served twice at once,
// --http2-server=net against =surge (scripts/h2-cost-ab.sh), are in
// docs/BENCHMARKS.md, "Server CPU per reservation over HTTP/2".
//
// # The connection loop
//
// A connection has one reader, the goroutine of ServeConn; one writer; and
// a goroutine for each stream whose handler runs, taken from those that
// wait for the next stream when one does (workers.go). Every piece of
// state of the connection and of its streams is guarded by the
// connection's mutex, held only for bookkeeping and to queue frames, never
// across a read, a write or a handler.
//
// Opening. The server queues its SETTINGS (Server.Settings) and a
// WINDOW_UPDATE that widens the connection's receive window to
// ConnWindow, then reads the client's preface and its first frame, which
// must be SETTINGS, within PrefaceTimeout. A connection opened by someone
// else (the front's sniffer writes the same SETTINGS and acknowledges the
// client's before it hands the connection over) replays what it read and
// cuts the server's duplicates; to the server, it is a fresh connection.
//
// Reading. The reader reads one frame at a time (the Framer joins HEADERS
// and CONTINUATION, decodes HPACK, and checks frame sizes, padding,
// pseudo-header order and duplicates, and field names and values) and
// acts on it before reading the next. A frame the Framer finds malformed
// is a connection error (GOAWAY with its code, then close) or a stream
// error (RST_STREAM, and reading goes on), as RFC 9113 says for each.
// Unknown frame types are ignored; a client's GOAWAY changes nothing (the
// server pushes no streams); a PUSH_PROMISE is a connection error.
//
// Streams. A HEADERS frame on a new odd id above every id seen opens a
// stream; on an even id it is a connection error, on an id below one seen
// and closed a connection error STREAM_CLOSED. A stream past
// MaxConcurrentStreams is refused with REFUSED_STREAM, before its request
// is built. The request must carry :method, :scheme and a non-empty :path
// (CONNECT: :authority alone), no :status or :protocol, no
// connection-specific field, TE at most "trailers", and one
// content-length, which its DATA must match; otherwise the stream is reset
// with PROTOCOL_ERROR. A header list past MaxHeaderListSize is answered
// 431 without the handler. A second HEADERS is the trailers: it must end
// the stream and carry no pseudo-header. DATA, WINDOW_UPDATE or
// RST_STREAM on an idle stream is a connection error; DATA or
// HEADERS on a stream the client has ended is a stream error
// STREAM_CLOSED. A PRIORITY frame is read and ignored but for a stream
// depending on itself, a stream error, as in HEADERS.
//
// A stream is closed once both sides have ended it, or either has reset
// it. The server's end comes when the handler returns: if the client has
// not ended its side then, the stream is reset with NO_ERROR (RFC 9113
// §8.1), and the handler's context is cancelled in every case. The last
// streams the server reset are remembered, so that what the client sent
// before it saw the reset is ignored rather than answered with errors.
//
// Flow control, receiving. A stream's body waits in memory for its
// handler, at most StreamWindow bytes of it, and all of a connection's at
// most ConnWindow: DATA past either window is a flow-control error, of
// the stream or of the connection. What the handler reads is granted back
// with WINDOW_UPDATE once half a window's worth has gathered; what the
// server discards (padding, DATA on closed streams, the unread body of a
// closed stream) goes back to the connection's window.
//
// Flow control, sending. A handler's DATA goes out as the stream's and the
// connection's send windows and the client's MAX_FRAME_SIZE allow; its
// writer waits for WINDOW_UPDATE otherwise. The client's
// SETTINGS_INITIAL_WINDOW_SIZE moves every stream's window, which may go
// negative; a window past 2³¹−1 is a flow-control error, of the stream or
// of the connection.
//
// Writing. Every frame is queued in the connection's buffer, and the
// writer, each time it wakes, yields once to the goroutines ready to run
// and then sends all that has queued with one write: the responses of
// many streams share a system call. Header blocks are
// encoded against HPACK's static table alone (names.go): they change no
// state the client keeps, and the client's SETTINGS_HEADER_TABLE_SIZE
// has nothing to bound. A handler's DATA waits while more than maxQueued
// bytes wait; the reader's control frames (acknowledgements, resets,
// window updates) never wait, and a client that makes the server queue
// more than maxControlQueued of them without reading is told
// ENHANCE_YOUR_CALM.
//
// Responses. A handler's response is gathered until it passes bodyBuffer
// bytes or the handler flushes; one that ends before goes out as HEADERS
// with its Content-Length and one DATA frame, or HEADERS alone with
// END_STREAM. The header gets a Date, and a sniffed Content-Type if the
// handler set none; trailers the handler declared (the Trailer header, or
// http.TrailerPrefix) end the stream in a last HEADERS. A handler that
// panics has its stream reset with INTERNAL_ERROR. The ResponseWriter's
// StreamID names the stream, for a handler that keeps count of streams
// (the front's gate ends a stream's count by its id).
//
// Ending. A connection error queues GOAWAY with the highest stream id
// seen, resets every stream, and reads on, discarding, for at most a
// second before the close, so that the GOAWAY is not lost to a reset.
// Shutdown, and IdleTimeout on a connection without streams, queue GOAWAY
// NO_ERROR; HEADERS past it are ignored, and the connection closes once
// its streams have ended. A connection that sends nothing for PingAfter
// is sent a PING, and closed if it then sends nothing for PingTimeout, so
// that a client gone without a word does not hold its parked streams. A
// failed write ends the connection. What the front adds, the rapid-reset
// guard and the admission gate, wraps the net.Conn given to ServeConn and
// sees the same bytes; the gate may hold a new stream's frames back and
// give the server frames that came after them first, in an order the
// protocol allows (the front's h2park.go).
package h2
