package httpc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// This file is the fast client's HTTP/1.1 response parser (RFC 9112). It
// reads straight from the connection's bufio.Reader: lines are slices of
// the reader's buffer (bufio.Reader.ReadSlice), looked at and dropped
// before the next read, and the body is appended to a buffer the caller
// reuses, so a well-formed reply costs no allocation. Only three fields
// matter to a client that never pipelines, never upgrades and asks for no
// compression: Content-Length, Transfer-Encoding and Connection. Every
// other field is checked for syntax and skipped.
//
// The parser is strict where leniency could make it misframe a reply
// (and so read the next reply as part of this one, or this one's tail as
// the next one's head): a malformed or ambiguous framing field is an
// error, never a guess. It is lenient where RFC 9112 allows a recipient
// to be (a bare LF ends a line; an empty reason phrase; obs-fold in
// fields it skips).

// Limits. Every read is also bounded by the connection's deadline, so a
// server that trickles bytes forever fails the request rather than
// hanging it; the limits bound memory.
const (
	// maxHeaderBytes bounds a reply's header section, 1xx heads and
	// trailers included (net/http's default is 1 MB too).
	maxHeaderBytes = 1 << 20
	// maxReplyBytes bounds a reply's content. The largest legitimate
	// reply, a batch of MaxBatch results, is under 1 MB.
	maxReplyBytes = 64 << 20
	// maxInformational bounds the 1xx replies skipped before the final one.
	maxInformational = 8
	// maxLengthDigits keeps a Content-Length or chunk size from
	// overflowing an int64 before it is compared with maxReplyBytes.
	maxLengthDigits = 15
)

// errMalformed is wrapped by every error that reports a reply breaking
// the protocol, as opposed to the connection failing.
var errMalformed = errors.New("malformed HTTP response")

func malformed(what string, near []byte) error {
	const maxNear = 64
	if len(near) > maxNear {
		near = near[:maxNear]
	}
	return fmt.Errorf("%w: %s: %q", errMalformed, what, near)
}

// reply is what readResponse learned besides the body.
type reply struct {
	status int
	// keepAlive reports that the connection may carry another request:
	// the reply was delimited by its own framing (not by the server
	// closing) and neither side asked to close.
	keepAlive bool
	// retryAfter is the reply's Retry-After in seconds (0: none).
	retryAfter time.Duration
}

// readResponse reads one reply from br and appends its content to
// body[:0]. noBody is set for a HEAD request, whose reply has headers but
// never content. The returned slice is body, grown if needed; it is
// returned even with an error, so the caller keeps the capacity.
//
// io.EOF means the server closed the connection before sending a byte;
// io.ErrUnexpectedEOF that it closed in the middle of the reply.
func readResponse(br *bufio.Reader, noBody bool, body []byte) (reply, []byte, error) {
	body = body[:0]
	budget := maxHeaderBytes
	for informational := 0; ; informational++ {
		h, err := readHead(br, &budget, informational == 0)
		if err != nil {
			return reply{}, body, err
		}
		switch {
		case h.status == 101:
			// A switch of protocols answers an Upgrade request, which
			// this client never sends.
			return reply{}, body, malformed("unsolicited 101 Switching Protocols", nil)
		case h.status < 200:
			// An interim reply (100 Continue, 103 Early Hints) has no
			// content; the final reply follows on the same connection.
			if informational == maxInformational {
				return reply{}, body, malformed("too many 1xx replies", nil)
			}
			continue
		}
		return readContent(br, h, noBody, body, &budget)
	}
}

// head is a parsed status line and header section.
type head struct {
	status        int
	http10        bool
	contentLength int64 // -1: absent
	chunked       bool
	close         bool // Connection: close
	keepAlive     bool // Connection: keep-alive (meaningful for HTTP/1.0)
	retryAfter    time.Duration
}

// readContent reads the content that h announces and decides whether the
// connection can be reused (RFC 9112 §6.3, §9.3).
func readContent(br *bufio.Reader, h head, noBody bool, body []byte, budget *int) (reply, []byte, error) {
	r := reply{status: h.status, keepAlive: !h.close && (!h.http10 || h.keepAlive), retryAfter: h.retryAfter}
	var err error
	switch {
	case noBody || h.status == 204 || h.status == 304:
		// No content whatever the framing fields say: a HEAD reply's
		// Content-Length describes the GET reply it stands for, and 204
		// and 304 never have content (RFC 9112 §6.3 rule 1).
	case h.chunked:
		body, err = readChunked(br, body, budget)
	case h.contentLength >= 0:
		body, err = readN(br, body, h.contentLength)
	default:
		// No framing: the content runs until the server closes the
		// connection, which then cannot carry another request.
		r.keepAlive = false
		body, err = readUntilEOF(br, body)
	}
	return r, body, err
}

// readHead reads a status line and its header section. first is set for
// the first head of a reply: EOF before its first byte is io.EOF (the
// server closed an idle connection), anywhere else io.ErrUnexpectedEOF.
func readHead(br *bufio.Reader, budget *int, first bool) (head, error) {
	h := head{contentLength: -1}
	line, err := readLine(br, budget)
	if err != nil {
		if err == io.EOF && !first {
			err = io.ErrUnexpectedEOF
		}
		return h, err
	}
	if h.status, h.http10, err = parseStatusLine(line); err != nil {
		return h, err
	}
	te := false // a Transfer-Encoding field was seen
	last := fieldNone
	for {
		line, err := readLine(br, budget)
		if err != nil {
			return h, unexpectedEOF(err)
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			// obs-fold: a continuation of the previous field's value
			// (RFC 9112 §5.2).
			if err := checkContinuation(last, line); err != nil {
				return h, err
			}
			continue
		}
		colon := indexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			// No name, or whitespace or a control between the name and
			// the colon (RFC 9112 §5.1).
			return h, malformed("bad header line", line)
		}
		name, value := line[:colon], trimOWS(line[colon+1:])
		if !isFieldValue(value) {
			return h, malformed("bad header value", line)
		}
		if last, err = h.addField(name, value); err != nil {
			return h, err
		}
		te = te || last == fieldTransferEncoding
	}
	if h.status < 200 {
		return h, nil // interim replies carry no content; their framing fields mean nothing
	}
	return h, h.checkFraming(te)
}

// addField reads one header field into h, and says which it was.
func (h *head) addField(name, value []byte) (field, error) {
	switch {
	case equalFoldASCII(name, "content-length"):
		return fieldContentLength, h.setContentLength(value)
	case equalFoldASCII(name, "transfer-encoding"):
		return fieldTransferEncoding, h.addTransferCodings(value)
	case equalFoldASCII(name, "connection"):
		h.addConnectionOptions(value)
		return fieldConnection, nil
	case equalFoldASCII(name, "retry-after"):
		h.retryAfter = parseRetryAfter(value)
	}
	return fieldOther, nil
}

// checkFraming refuses a reply head whose framing is ambiguous; te says
// it had a Transfer-Encoding field.
func (h *head) checkFraming(te bool) error {
	switch {
	case te && !h.chunked:
		return malformed("Transfer-Encoding without chunked", nil)
	case te && h.contentLength >= 0:
		// Both framings at once is how responses are smuggled (RFC 9112
		// §6.3 rule 3): refuse rather than pick one.
		return malformed("both Transfer-Encoding and Content-Length", nil)
	case te && h.http10:
		// An HTTP/1.0 server cannot have chunked its reply (RFC 9112 §6.1).
		return malformed("Transfer-Encoding in an HTTP/1.0 reply", nil)
	}
	return nil
}

// parseStatusLine parses "HTTP/1.1 200 OK". The reason phrase may be
// empty, and the space before it missing, as net/http also accepts.
func parseStatusLine(line []byte) (status int, http10 bool, err error) {
	if len(line) < len("HTTP/1.x 200") || string(line[:7]) != "HTTP/1." || !isDigit(line[7]) || line[8] != ' ' {
		return 0, false, malformed("bad status line", line)
	}
	code := line[9:12]
	if code[0] < '1' || !isDigit(code[0]) || !isDigit(code[1]) || !isDigit(code[2]) ||
		(len(line) > 12 && line[12] != ' ') || !isFieldValue(line[12:]) {
		return 0, false, malformed("bad status line", line)
	}
	status = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	return status, line[7] == '0', nil
}

// field names the fields that matter, for obs-fold.
type field int

const (
	fieldNone field = iota // no field yet: a continuation line is an error
	fieldOther
	fieldContentLength
	fieldTransferEncoding
	fieldConnection
)

// setContentLength parses one Content-Length value. Repeated fields must
// agree (RFC 9110 §8.6); a list in one field is refused, as net/http does.
func (h *head) setContentLength(v []byte) error {
	n, ok := parseDecimal(v)
	switch {
	case !ok:
		return malformed("bad Content-Length", v)
	case n > maxReplyBytes:
		return malformed("Content-Length too large", v)
	case h.contentLength >= 0 && h.contentLength != n:
		return malformed("conflicting Content-Length fields", v)
	}
	h.contentLength = n
	return nil
}

// addTransferCodings reads a Transfer-Encoding field. This client sends no
// TE field, so the only coding a server may apply is chunked, once (RFC
// 9112 §6.1, §7.4); anything else would leave content this client cannot
// decode, or framing it cannot trust. Like net/http, it accepts exactly
// one field reading "chunked", not a list with empty elements around it.
func (h *head) addTransferCodings(v []byte) error {
	if !equalFoldASCII(v, "chunked") || h.chunked {
		return malformed("unsupported Transfer-Encoding", v)
	}
	h.chunked = true
	return nil
}

// addConnectionOptions notes "close" and "keep-alive" in a Connection
// list; other options concern hops this client does not know of.
func (h *head) addConnectionOptions(v []byte) {
	for len(v) > 0 {
		var elem []byte
		elem, v = nextListElement(v)
		switch {
		case equalFoldASCII(elem, "close"):
			h.close = true
		case equalFoldASCII(elem, "keep-alive"):
			h.keepAlive = true
		}
	}
}

// checkContinuation checks an obs-fold continuation line of the field
// last. Folding is obsolete and no server this client talks to sends it;
// folding one of the three fields that decide framing and reuse is
// refused rather than interpreted ("Connection: foo" + " close" reads
// "foo close", which does not ask to close: too subtle to trust). A fold
// of any other field is checked and skipped.
func checkContinuation(last field, line []byte) error {
	switch {
	case last == fieldNone || !isFieldValue(trimOWS(line)):
		return malformed("bad continuation line", line)
	case last != fieldOther && len(trimOWS(line)) > 0:
		return malformed("folded framing field", line)
	}
	return nil
}

// readChunked decodes chunked content (RFC 9112 §7.1): chunks of
// "<hex size>[;ext]\r\n<data>\r\n", then "0[;ext]\r\n", trailer fields
// and an empty line. Extensions and trailers are checked and dropped.
func readChunked(br *bufio.Reader, body []byte, budget *int) ([]byte, error) {
	for {
		line, err := readChunkLine(br)
		if err != nil {
			return body, err
		}
		size, err := parseChunkSize(line)
		if err != nil {
			return body, err
		}
		if size == 0 {
			break
		}
		if int64(len(body))+size > maxReplyBytes {
			return body, malformed("chunked content too large", line)
		}
		if body, err = readN(br, body, size); err != nil {
			return body, err
		}
		if line, err = readChunkLine(br); err != nil {
			return body, err
		}
		if len(line) != 0 {
			return body, malformed("chunk data longer than its size", line)
		}
	}
	last := fieldNone
	for { // the trailer section; its lines too end in CRLF exactly
		line, err := readChunkLine(br)
		if err != nil {
			return body, err
		}
		if *budget -= len(line) + 2; *budget < 0 {
			return body, malformed("trailer section too large", nil)
		}
		if len(line) == 0 {
			return body, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			// A folded trailer: trailers are dropped, so only check it.
			if err := checkContinuation(last, line); err != nil {
				return body, err
			}
			continue
		}
		colon := indexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) || !isFieldValue(trimOWS(line[colon+1:])) {
			return body, malformed("bad trailer line", line)
		}
		last = fieldOther
	}
}

// parseChunkSize parses a chunk-size line: hex digits, then optionally
// whitespace and extensions, which are checked for control characters
// and otherwise ignored.
func parseChunkSize(line []byte) (int64, error) {
	var n int64
	i := 0
	for ; i < len(line); i++ {
		d, ok := hexDigit(line[i])
		if !ok {
			break
		}
		if i == maxLengthDigits {
			return 0, malformed("chunk size too large", line)
		}
		n = n<<4 | int64(d)
	}
	if i == 0 {
		return 0, malformed("bad chunk size", line)
	}
	rest := trimOWS(line[i:])
	if len(rest) > 0 && (rest[0] != ';' || !isFieldValue(rest)) {
		return 0, malformed("bad chunk extension", line)
	}
	return n, nil
}

// readN appends exactly n bytes from br to body. The buffer grows with
// what actually arrives, not with what the length field promises, so a
// lying length costs no more memory than the bytes received.
func readN(br *bufio.Reader, body []byte, n int64) ([]byte, error) {
	for n > 0 {
		if len(body) == cap(body) {
			body = slices.Grow(body, int(min(n, int64(max(cap(body), 4096)))))
		}
		k := int(min(n, int64(cap(body)-len(body))))
		m, err := io.ReadFull(br, body[len(body):len(body)+k])
		body = body[:len(body)+m]
		n -= int64(m)
		if err != nil {
			return body, unexpectedEOF(err)
		}
	}
	return body, nil
}

// readUntilEOF appends everything br yields until the server closes.
func readUntilEOF(br *bufio.Reader, body []byte) ([]byte, error) {
	for {
		if len(body) == cap(body) {
			body = slices.Grow(body, max(cap(body), 4096))
		}
		m, err := br.Read(body[len(body):cap(body)])
		body = body[:len(body)+m]
		if len(body) > maxReplyBytes {
			return body, malformed("content too large", nil)
		}
		if err == io.EOF {
			return body, nil
		}
		if err != nil {
			return body, err
		}
	}
}

// readLine returns the next line without its terminator, CRLF or a bare
// LF (RFC 9112 §2.2), as a slice of br's buffer valid until the next read.
// A line longer than br's buffer is an error, as is exceeding budget.
func readLine(br *bufio.Reader, budget *int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return nil, malformed("line too long", line)
	case err == io.EOF && len(line) > 0:
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	}
	if *budget -= len(line); *budget < 0 {
		return nil, malformed("header section too large", nil)
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// readChunkLine reads a line of the chunked coding, trailers included.
// Unlike the head's lines, whose bare LF a recipient may accept (RFC 9112
// §2.2), the coding's lines end in CRLF exactly (§7.1): leniency in chunk
// framing is where parsers come to disagree about where a message ends.
// Chunk-size lines do not count against the header budget (a long reply
// in small chunks is legitimate); each is bounded by the reader's buffer,
// the content by maxReplyBytes.
func readChunkLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return nil, malformed("chunk line too long", line)
	case err != nil:
		return nil, unexpectedEOF(err)
	case len(line) < 2 || line[len(line)-2] != '\r':
		return nil, malformed("chunk line not ended by CRLF", line)
	}
	return line[:len(line)-2], nil
}

// unexpectedEOF turns EOF in the middle of a reply into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseDecimal parses 1 to maxLengthDigits decimal digits.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > maxLengthDigits {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// nextListElement splits a comma-separated list (RFC 9110 §5.6.1) into
// its first element, trimmed, and the rest.
func nextListElement(v []byte) (elem, rest []byte) {
	if i := indexByte(v, ','); i >= 0 {
		return trimOWS(v[:i]), v[i+1:]
	}
	return trimOWS(v), nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// trimOWS trims optional whitespace (SP, HTAB) from both ends.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// equalFoldASCII reports whether b equals lower, a lower-case ASCII
// string, ignoring the case of ASCII letters only.
func equalFoldASCII(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// tokenChars marks the bytes of a token (RFC 9110 §5.6.2), such as a
// field name.
var tokenChars = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

func isToken(b []byte) bool {
	for _, c := range b {
		if !tokenChars[c] {
			return false
		}
	}
	return len(b) > 0
}

// isFieldValue reports whether b holds only what a field value (or a
// reason phrase) may: visible ASCII, SP, HTAB and obs-text. A CR, LF or
// NUL inside a value is refused (RFC 9110 §5.5): it is how replies are
// split.
func isFieldValue(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseRetryAfter reads a Retry-After field's delay in seconds; a date,
// or anything else, reads as none.
func parseRetryAfter(v []byte) time.Duration {
	n, ok := parseDecimal(trimOWS(v))
	if !ok || n > maxRetryAfterSeconds {
		return 0
	}
	return time.Duration(n) * time.Second
}

// maxRetryAfterSeconds bounds the delay a reply can ask of a client.
const maxRetryAfterSeconds = 3600
