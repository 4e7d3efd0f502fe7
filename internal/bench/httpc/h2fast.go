package httpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/surge-dev/surge/internal/hpackw"
)

// H2FastClient is the load lab's own HTTP/2 client over cleartext (h2c
// with prior knowledge), the default of an --http2 run against an http://
// target: Conns connections, each carrying the streams of many Endpoints
// at once. golang.org/x/net/http2 frames and compresses (Framer, hpack);
// what is the lab's own is the connection around them.
//
// net/http's HTTP/2 client (H2CClient) writes each request with a system
// call of its own and hands every request and reply through channels,
// request clones and header maps; against a cluster on the same machine
// that cost the load generator more CPU per reservation than the whole
// HTTP/1.1 exchange (docs/BENCHMARKS.md, "Ticketing spike on three
// nodes"). Here an Endpoint's goroutine encodes its request into the
// connection's pending frames under the connection's lock and wakes the
// connection's one writer goroutine, which, once the goroutines ready to
// run have added theirs, writes everything pending in one system call.
// One reader goroutine per connection reads the replies, many to a system
// call when the load is high, and wakes each Endpoint once its reply is
// whole. A reaper goroutine per connection fails the streams whose reply
// is overdue, and the Endpoint's context gives its stream up when it ends.
//
// What it leaves out: TLS (H2CClient serves https:// targets), server
// push (disabled in its SETTINGS; a PUSH_PROMISE ends the connection),
// priorities, trailers' content (a trailer block is read and dropped).
const H2FastClient ClientKind = "h2fast"

// Flow control the client grants the server: each stream's window, and
// the connection's (raised from the protocol's 64 KiB at the start);
// WINDOW_UPDATEs give back what was read once half a window is consumed.
const (
	h2FastStreamWindow = 4 << 20
	h2FastConnWindow   = 32 << 20
	h2FastMaxHeaders   = 64 << 10
	h2FastReadBuffer   = 64 << 10
)

var errH2Unprocessed = errors.New("bench: the server did not process the stream")

// h2FastTransport spreads Endpoints over its connections, round robin.
type h2FastTransport struct {
	addr      string // host:port to dial
	authority string // :authority
	auth      string // Authorization's value, or empty
	timeout   time.Duration
	dialer    net.Dialer
	wire      *wireCounters
	log       *h2Log
	slots     []*h2Slot
	next      atomic.Uint32
	closed    atomic.Bool
}

func newH2FastTransport(base *url.URL, apiKey string, conns int, timeout time.Duration, wire *wireCounters, log *h2Log) (*h2FastTransport, error) {
	if base.Scheme != "http" {
		return nil, fmt.Errorf("bench: the %s client speaks h2c (plain http) only; use --http-client %s for %s", H2FastClient, H2CClient, base.Redacted())
	}
	t := &h2FastTransport{
		addr:      hostPort(base),
		authority: base.Host,
		timeout:   timeout,
		dialer:    net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second},
		wire:      wire,
		log:       log,
	}
	if apiKey != "" {
		t.auth = "Bearer " + apiKey
	}
	for range conns {
		t.slots = append(t.slots, &h2Slot{t: t})
	}
	return t, nil
}

func (t *h2FastTransport) close() {
	t.closed.Store(true)
	for _, s := range t.slots {
		s.close()
	}
}

// h2Slot is one of the transport's connections: dialled on first use, and
// again once the server has closed it or told it to go away.
type h2Slot struct {
	t   *h2FastTransport
	mu  sync.Mutex
	cur *h2FastConn
	all []*h2FastConn // the connections that may still be open, to close them all
}

// conn returns the slot's connection, dialling one if it has none usable.
func (s *h2Slot) conn(ctx context.Context) (*h2FastConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil && s.cur.usable() {
		return s.cur, nil
	}
	if s.t.closed.Load() {
		return nil, errClientClosed
	}
	c, err := dialH2Fast(ctx, s.t)
	if err != nil {
		return nil, err
	}
	// The connections that have ended need no closing: only the live
	// ones (the last, and those told to go away) are kept.
	s.all = append(slices.DeleteFunc(s.all, (*h2FastConn).ended), c)
	s.cur = c
	return c, nil
}

func (s *h2Slot) close() {
	s.mu.Lock()
	all := s.all
	s.all, s.cur = nil, nil
	s.mu.Unlock()
	for _, c := range all {
		c.shut()
	}
}

// h2Call is one stream's request as the reader sees it: where its reply
// goes and how the Endpoint learns it is whole.
type h2Call struct {
	done     chan struct{} // one signal per completed stream
	id       uint32
	deadline time.Time
	status   int
	retry    time.Duration
	reply    []byte
	err      error
	sendWin  int64  // what the server lets this stream send still
	unacked  uint32 // bytes read and not yet given back by WINDOW_UPDATE
}

// h2FastConn is one HTTP/2 connection. The reader goroutine owns the read
// half of fr; everything else is under mu.
type h2FastConn struct {
	t  *h2FastTransport
	nc net.Conn
	fr *http2.Framer

	// kick wakes the writer; dead is closed when the connection ends.
	kick, dead chan struct{}
	// loops is the reader, the writer and the reaper, which end with the
	// connection.
	loops sync.WaitGroup

	mu   sync.Mutex
	cond sync.Cond // a stream ended, a window grew, SETTINGS came, the connection ended
	// pending holds the frames not yet written; spare is the buffer the
	// writer writes from. kicked says the writer has been woken for them.
	pending, spare *bytes.Buffer
	kicked         bool
	hbuf           []byte // the header block being encoded
	lenBuf         [20]byte
	// sized says the first header block, which sets the client's HPACK
	// table to 0 bytes, has been queued.
	sized bool
	// dec decodes the server's header blocks; block is the one being
	// read: its stream, size so far, whether it ends the stream, and what
	// the client takes from it.
	dec        *hpack.Decoder
	block      headerBlock
	nextID     uint32
	calls      map[uint32]*h2Call
	settled    bool // the server's first SETTINGS are applied
	maxStreams uint32
	maxFrame   uint32
	sendWin    int64 // the connection's send window
	initWin    int64 // a new stream's send window, from the server's SETTINGS
	unacked    uint32
	goneAway   bool
	lastID     uint32 // GOAWAY's last stream id
	closed     bool   // shut by the client
	err        error  // why the connection ended; nil while it lives
}

// headerBlock is what the client takes from a header block: the status
// and Retry-After, the only fields it reads.
type headerBlock struct {
	stream    uint32
	size      int
	endStream bool
	status    string
	retry     time.Duration
}

// The client's header fields, by their names' index in HPACK's static
// table (RFC 7541, Appendix A).
const (
	hpackAuthority     = 1
	hpackMethod        = 2
	hpackPath          = 4
	hpackScheme        = 6
	hpackAuthorization = 23
	hpackContentLength = 28
	hpackContentType   = 31
	// hpackTableSizeZero sets the encoder's dynamic table to 0 bytes
	// (§6.3), so no SETTINGS_HEADER_TABLE_SIZE can find it too large.
	hpackTableSizeZero = 0x20
)

// appendField appends a header field as a literal never indexed, its name
// from the static table (RFC 7541 §6.2.3), its value a raw string (§5.2).
// With no dynamic table, a field's encoding does not depend on the fields
// before it, and costs no table search: hpack.Encoder's search took more
// of the load generator's CPU than all the rest of a request's encoding.
func appendField[V string | []byte](b []byte, name uint64, value V) []byte {
	return hpackw.AppendString(hpackw.AppendInt(b, 0x10, 4, name), value)
}

// pendingWriter is the Framer's writer: frames go into the connection's
// pending buffer, under mu.
type pendingWriter struct{ c *h2FastConn }

func (w pendingWriter) Write(p []byte) (int, error) { return w.c.pending.Write(p) }

// dialH2Fast connects, sends the preface and the client's SETTINGS, and
// returns once the server's SETTINGS are applied.
func dialH2Fast(ctx context.Context, t *h2FastTransport) (*h2FastConn, error) {
	raw, err := t.dialer.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, err
	}
	t.log.count(func(e *H2Events) { e.Dials++ })
	c := &h2FastConn{
		t: t, nc: t.wire.wrap(raw), pending: new(bytes.Buffer), spare: new(bytes.Buffer),
		kick: make(chan struct{}, 1), dead: make(chan struct{}),
		nextID: 1, calls: map[uint32]*h2Call{},
		maxStreams: 100, maxFrame: 16 << 10, sendWin: 65535, initWin: 65535,
	}
	c.cond.L = &c.mu
	c.fr = http2.NewFramer(pendingWriter{c}, bufio.NewReaderSize(c.nc, h2FastReadBuffer))
	c.dec = hpack.NewDecoder(4096, c.field)
	c.dec.SetMaxStringLength(h2FastMaxHeaders)
	c.fr.SetMaxReadFrameSize(16 << 10) // the protocol's default: the client sets no other
	// The server's SETTINGS must come within the request timeout.
	_ = c.nc.SetReadDeadline(time.Now().Add(t.timeout))
	c.mu.Lock()
	c.pending.WriteString(http2.ClientPreface)
	_ = c.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2FastStreamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: h2FastMaxHeaders},
	)
	_ = c.fr.WriteWindowUpdate(0, h2FastConnWindow-65535)
	c.kickLocked()
	c.loops.Go(c.writeLoop)
	c.loops.Go(c.readLoop)
	c.loops.Go(c.reapLoop)
	for !c.settled && c.err == nil {
		c.cond.Wait()
	}
	err = c.err
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ended reports whether the connection has ended.
func (c *h2FastConn) ended() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// usable reports whether new streams may start on the connection.
func (c *h2FastConn) usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil && !c.goneAway
}

// shut closes the connection for good, its streams failing, and returns
// once its goroutines have ended.
func (c *h2FastConn) shut() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	_ = c.nc.Close()
	c.loops.Wait()
}

// kickLocked has the writer write the pending frames.
func (c *h2FastConn) kickLocked() {
	if c.kicked || c.pending.Len() == 0 {
		return
	}
	c.kicked = true
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// writeLoop writes the pending frames whenever kicked, until the
// connection ends. Before taking them it lets the goroutines that are
// ready run first: the Endpoints woken by the replies just read add their
// next requests, and one write carries them all.
func (c *h2FastConn) writeLoop() {
	for {
		select {
		case <-c.kick:
		case <-c.dead:
			return
		}
		runtime.Gosched()
		c.mu.Lock()
		buf := c.pending
		c.pending, c.spare = c.spare, buf
		c.kicked = false
		c.mu.Unlock()
		if buf.Len() == 0 {
			continue
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.t.timeout))
		_, err := c.nc.Write(buf.Bytes())
		buf.Reset()
		if err != nil {
			c.mu.Lock()
			c.endLocked(err)
			c.mu.Unlock()
			return
		}
	}
}

// reapLoop fails the streams whose reply is overdue, until the
// connection ends: a fraction of the timeout late at most.
func (c *h2FastConn) reapLoop() {
	tick := time.NewTicker(min(max(c.t.timeout/16, 10*time.Millisecond), time.Second))
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			c.mu.Lock()
			for id, call := range c.calls {
				if now.After(call.deadline) {
					c.giveUpLocked(id, call, c.overdue())
				}
			}
			c.cond.Broadcast() // for the requests waiting for a stream
			c.mu.Unlock()
		case <-c.dead:
			return
		}
	}
}

// overdue is the error of a request whose timeout has passed.
func (c *h2FastConn) overdue() error {
	return fmt.Errorf("bench: no reply within %s: %w", c.t.timeout, context.DeadlineExceeded)
}

// endLocked ends the connection: every stream under way fails with err.
func (c *h2FastConn) endLocked(err error) {
	if c.err != nil {
		return
	}
	if c.closed {
		err = errClientClosed
	} else {
		c.t.log.count(func(e *H2Events) { e.ConnErrors[connErrorKey(err)]++ })
	}
	c.err = err
	close(c.dead)
	for id, call := range c.calls {
		c.completeLocked(id, call, fmt.Errorf("bench: HTTP/2 connection lost: %w", err))
	}
	c.cond.Broadcast()
	_ = c.nc.Close()
}

// completeLocked ends stream id: its Endpoint may read call.
func (c *h2FastConn) completeLocked(id uint32, call *h2Call, err error) {
	delete(c.calls, id)
	call.err = err
	call.done <- struct{}{}
	c.cond.Broadcast()
	c.drainedLocked()
}

// drainedLocked closes a connection told to go away once nothing is left
// to read on it.
func (c *h2FastConn) drainedLocked() {
	if c.goneAway && len(c.calls) == 0 && c.err == nil {
		c.closed = true
		c.endLocked(errClientClosed)
	}
}

// start opens a stream for a request and queues its frames; the body goes
// out as the windows allow. It returns errH2Unprocessed when the
// connection can take no new stream, or the context's error or a timeout
// when no stream could open before either ended.
func (c *h2FastConn) start(ctx context.Context, call *h2Call, method string, path []byte, body []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.err == nil && !c.goneAway && uint32(len(c.calls)) >= c.maxStreams {
		// The reaper's tick and the context's watch wake the wait.
		if err := ctx.Err(); err != nil {
			return err
		}
		if !time.Now().Before(call.deadline) {
			return c.overdue()
		}
		c.cond.Wait()
	}
	if c.err != nil || c.goneAway {
		return errH2Unprocessed
	}
	id := c.nextID
	c.nextID += 2
	c.hbuf = c.hbuf[:0]
	if !c.sized {
		c.hbuf, c.sized = append(c.hbuf, hpackTableSizeZero), true
	}
	c.hbuf = appendField(c.hbuf, hpackMethod, method)
	c.hbuf = appendField(c.hbuf, hpackScheme, "http")
	c.hbuf = appendField(c.hbuf, hpackAuthority, c.t.authority)
	c.hbuf = appendField(c.hbuf, hpackPath, path)
	if c.t.auth != "" {
		c.hbuf = appendField(c.hbuf, hpackAuthorization, c.t.auth)
	}
	if body != nil {
		c.hbuf = appendField(c.hbuf, hpackContentType, "application/json")
		c.hbuf = appendField(c.hbuf, hpackContentLength, strconv.AppendInt(c.lenBuf[:0], int64(len(body)), 10))
	}
	call.id, call.sendWin = id, c.initWin
	c.calls[id] = call
	c.writeHeadersLocked(id, c.hbuf, body == nil)
	if body != nil {
		c.sendBodyLocked(id, call, body)
	}
	c.kickLocked()
	return nil
}

// writeHeadersLocked queues a header block: a HEADERS frame, and
// CONTINUATIONs for what exceeds the server's frame size.
func (c *h2FastConn) writeHeadersLocked(id uint32, block []byte, endStream bool) {
	n := min(len(block), int(c.maxFrame))
	_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block[:n], EndStream: endStream, EndHeaders: n == len(block)})
	for block = block[n:]; len(block) > 0; block = block[n:] {
		n = min(len(block), int(c.maxFrame))
		_ = c.fr.WriteContinuation(id, n == len(block), block[:n])
	}
}

// sendBodyLocked queues body as DATA frames, waiting for window when the
// server's flow control runs out. The stream may end meanwhile (a reply
// before the whole body, a reset); then the rest is not sent.
func (c *h2FastConn) sendBodyLocked(id uint32, call *h2Call, body []byte) {
	if len(body) == 0 {
		_ = c.fr.WriteData(id, true, nil)
		return
	}
	for len(body) > 0 {
		n := min(int64(len(body)), int64(c.maxFrame), c.sendWin, call.sendWin)
		if n <= 0 {
			c.kickLocked()
			if c.err != nil || c.calls[id] != call {
				return
			}
			c.cond.Wait()
			continue
		}
		c.sendWin -= n
		call.sendWin -= n
		_ = c.fr.WriteData(id, int(n) == len(body), body[:n])
		body = body[n:]
	}
}

// giveUp ends call, if stream id is still its own, with err, resetting
// the stream. Otherwise it wakes the requests waiting for a stream, which
// may be call's.
func (c *h2FastConn) giveUp(call *h2Call, id uint32, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls[id] == call {
		c.giveUpLocked(id, call, err)
		return
	}
	c.cond.Broadcast()
}

func (c *h2FastConn) giveUpLocked(id uint32, call *h2Call, err error) {
	c.completeLocked(id, call, err)
	if c.err == nil {
		_ = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		c.kickLocked()
	}
}

// readLoop reads the server's frames until the connection ends.
func (c *h2FastConn) readLoop() {
	for {
		f, err := c.fr.ReadFrame()
		c.mu.Lock()
		if err == nil {
			err = c.handleLocked(f)
		}
		if err != nil {
			c.endLocked(err)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// handleLocked acts on one frame from the server.
func (c *h2FastConn) handleLocked(f http2.Frame) error {
	id := f.Header().StreamID
	switch f := f.(type) {
	case *http2.SettingsFrame:
		return c.settingsLocked(f)
	case *http2.HeadersFrame:
		c.block = headerBlock{stream: id, endStream: f.StreamEnded()}
		return c.headerFragmentLocked(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.ContinuationFrame:
		return c.headerFragmentLocked(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.DataFrame:
		c.dataLocked(id, f)
	case *http2.RSTStreamFrame:
		c.t.log.count(func(e *H2Events) { e.Resets[f.ErrCode.String()]++ })
		if call := c.calls[id]; call != nil {
			err := error(http2.StreamError{StreamID: id, Code: f.ErrCode})
			if f.ErrCode == http2.ErrCodeRefusedStream {
				err = errH2Unprocessed
			}
			c.completeLocked(id, call, err)
		}
	case *http2.GoAwayFrame:
		c.goAwayLocked(f)
	case *http2.PushPromiseFrame:
		// Its header block would go undecoded, and the decoder's table
		// out of step: push is disabled, so the frame is an error.
		return http2.ConnectionError(http2.ErrCodeProtocol)
	case *http2.PingFrame:
		if !f.IsAck() {
			_ = c.fr.WritePing(true, f.Data)
			c.kickLocked()
		}
	case *http2.WindowUpdateFrame:
		if id == 0 {
			c.sendWin += int64(f.Increment)
		} else if call := c.calls[id]; call != nil {
			call.sendWin += int64(f.Increment)
		}
		c.cond.Broadcast()
	}
	return nil
}

func (c *h2FastConn) settingsLocked(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingMaxConcurrentStreams:
			c.maxStreams = s.Val
		case http2.SettingMaxFrameSize:
			c.maxFrame = s.Val
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - c.initWin
			for _, call := range c.calls {
				call.sendWin += delta
			}
			c.initWin = int64(s.Val)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !c.settled {
		c.settled = true
		_ = c.nc.SetReadDeadline(time.Time{})
	}
	_ = c.fr.WriteSettingsAck()
	c.kickLocked()
	c.cond.Broadcast()
	return nil
}

// field takes a header field of the block being read.
func (c *h2FastConn) field(f hpack.HeaderField) {
	switch f.Name {
	case ":status":
		c.block.status = f.Value
	case "retry-after":
		c.block.retry = parseRetryAfter([]byte(f.Value))
	}
}

// headerFragmentLocked decodes part of a header block (the Framer has
// checked that CONTINUATIONs follow their HEADERS), and once the block is
// whole, gives its stream the status. Every block is decoded, a stream's
// the client gave up included: the decoder's table follows them all.
func (c *h2FastConn) headerFragmentLocked(frag []byte, end bool) error {
	if c.block.size += len(frag); c.block.size > h2FastMaxHeaders {
		return fmt.Errorf("bench: a header block of more than %d bytes", h2FastMaxHeaders)
	}
	if _, err := c.dec.Write(frag); err != nil {
		return err
	}
	if !end {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return err
	}
	b := c.block
	call := c.calls[b.stream]
	if call == nil {
		return nil
	}
	if b.status == "" && call.status != 0 && b.endStream { // trailers
		c.completeLocked(b.stream, call, nil)
		return nil
	}
	status, err := strconv.Atoi(b.status)
	if err != nil || status < 100 || status > 999 {
		c.completeLocked(b.stream, call, fmt.Errorf("bench: reply with :status %q", b.status))
		_ = c.fr.WriteRSTStream(b.stream, http2.ErrCodeProtocol)
		c.kickLocked()
		return nil
	}
	if status >= 200 && call.status == 0 {
		call.status, call.retry = status, b.retry
	}
	if b.endStream {
		c.completeLocked(b.stream, call, nil)
	}
	return nil
}

// dataLocked takes a DATA frame into its stream's reply and gives the
// flow control back once half a window is read.
func (c *h2FastConn) dataLocked(id uint32, f *http2.DataFrame) {
	c.unacked += f.Length
	if c.unacked >= h2FastConnWindow/2 {
		_ = c.fr.WriteWindowUpdate(0, c.unacked)
		c.unacked = 0
		c.kickLocked()
	}
	call := c.calls[id]
	if call == nil {
		return
	}
	if len(call.reply)+len(f.Data()) > maxReplyBytes {
		c.giveUpLocked(id, call, fmt.Errorf("bench: a reply of more than %d bytes", maxReplyBytes))
		return
	}
	call.reply = append(call.reply, f.Data()...)
	if f.StreamEnded() {
		c.completeLocked(id, call, nil)
		return
	}
	call.unacked += f.Length
	if call.unacked >= h2FastStreamWindow/2 {
		_ = c.fr.WriteWindowUpdate(id, call.unacked)
		call.unacked = 0
		c.kickLocked()
	}
}

// goAwayLocked stops new streams; those past the server's last stream
// were not processed and may go again on another connection.
func (c *h2FastConn) goAwayLocked(f *http2.GoAwayFrame) {
	c.t.log.count(func(e *H2Events) { e.GoAways[f.ErrCode.String()]++ })
	c.goneAway, c.lastID = true, f.LastStreamID
	for id, call := range c.calls {
		if id > f.LastStreamID {
			c.completeLocked(id, call, errH2Unprocessed)
		}
	}
	c.cond.Broadcast()
	c.drainedLocked()
}

// h2FastEndpoint is an Endpoint of the h2fast client: its streams go on
// one of the transport's connections.
type h2FastEndpoint struct {
	t        *h2FastTransport
	slot     *h2Slot
	ctx      context.Context
	method   string
	uri      string // the Endpoint's own request-URI
	basePath string
	call     h2Call
	path     []byte
	buf      []byte
	// conn and id are the connection and id of the last stream, for the
	// context's watch, which gives the stream up when the context ends.
	// Read apart from each other they may not match: giveUp checks.
	conn      atomic.Pointer[h2FastConn]
	id        atomic.Uint32
	stopWatch func() bool
}

func newH2FastEndpoint(t *h2FastTransport, ctx context.Context, method, requestURI, basePath string) *h2FastEndpoint {
	e := &h2FastEndpoint{
		t: t, slot: t.slots[int(t.next.Add(1)-1)%len(t.slots)], ctx: ctx,
		method: method, uri: requestURI, basePath: basePath,
		call: h2Call{done: make(chan struct{}, 1)},
	}
	// One watch for the Endpoint's life, not a timer and a select per
	// request: the connection's reaper times streams out.
	e.stopWatch = context.AfterFunc(ctx, func() {
		if c := e.conn.Load(); c != nil {
			c.giveUp(&e.call, e.id.Load(), ctx.Err())
		}
	})
	return e
}

func (e *h2FastEndpoint) body() []byte              { return e.buf[:0] }
func (e *h2FastEndpoint) defaultMethod() string     { return e.method }
func (e *h2FastEndpoint) retryAfter() time.Duration { return e.call.retry }
func (e *h2FastEndpoint) close()                    { e.stopWatch() }

// send sends one request as a stream and waits for its whole reply. A
// stream the server did not process (refused, or past a GOAWAY) goes
// again, up to h2Retries times, on the slot's next connection; the
// timeout covers them all.
func (e *h2FastEndpoint) send(method string, uri, body []byte) (int, []byte, error) {
	if body != nil {
		e.buf = body
	}
	e.path = e.path[:0]
	if uri == nil {
		e.path = append(e.path, e.uri...)
	} else {
		e.path = append(append(e.path, e.basePath...), uri...)
	}
	e.call.deadline = time.Now().Add(e.t.timeout)
	for attempt := 0; ; attempt++ {
		if err := e.ctx.Err(); err != nil {
			return 0, nil, err
		}
		c, err := e.slot.conn(e.ctx)
		if err != nil {
			return 0, nil, e.failed(err)
		}
		status, err := e.roundTrip(c, method, body)
		if err == nil {
			return status, e.call.reply, nil
		}
		if !errors.Is(err, errH2Unprocessed) || attempt == h2Retries {
			return 0, nil, e.failed(err)
		}
	}
}

// roundTrip sends the request on c and waits for the reply, which comes
// whole, or failed: reset, timed out, given up with the context, or lost
// with the connection.
func (e *h2FastEndpoint) roundTrip(c *h2FastConn, method string, body []byte) (int, error) {
	call := &e.call
	call.status, call.retry, call.err, call.reply = 0, 0, nil, call.reply[:0]
	e.conn.Store(c)
	if err := c.start(e.ctx, call, method, e.path, body); err != nil {
		return 0, err
	}
	e.id.Store(call.id)
	if err := e.ctx.Err(); err != nil {
		c.giveUp(call, call.id, err) // the watch may have run before the stream began
	}
	<-call.done
	if call.err != nil {
		return 0, call.err
	}
	if call.status == 0 {
		return 0, errors.New("bench: the stream ended without a final status")
	}
	return call.status, nil
}

// failed prefers the context's error once it has ended.
func (e *h2FastEndpoint) failed(err error) error {
	if cerr := e.ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}
