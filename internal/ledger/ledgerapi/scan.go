package ledgerapi

import (
	"strconv"
	"unicode/utf8"
)

// This file holds a small, strict JSON scanner for request bodies.
//
// Why not encoding/json: a batch carries up to 8,190 transfers, and the
// reflection-based decoder costs a few microseconds per item, which would eat
// a whole core at the 500,000 transfers/s target. It is also laxer than the
// contract wants: it matches field names case-insensitively, lets a
// duplicate key silently win ({"amount":1,"amount":9}), and replaces invalid
// UTF-8 with U+FFFD instead of refusing it. The scanner below accepts exactly
// RFC 8259 JSON, minus those three things, and the differential fuzz tests
// in fuzz_test.go check it against encoding/json.
//
// Why not github.com/go-json-experiment/json, which is as strict
// (TestJSONv2IsStrict): it costs about twice as much, with three times the
// allocations, though the scanner also validates and builds the requests
// (jsonv2_bench_test.go in alternating A/B pairs; docs/BENCHMARKS.md,
// "Figures behind the code").

// errKind classifies an input error. Handlers only need the status it maps to;
// the tests use the kind to tell deliberate strictness apart from a bug.
type errKind uint8

const (
	errSyntax         errKind = iota + 1 // not JSON at all
	errType                              // valid JSON, wrong type for the field
	errUnknownField                      // a member the contract does not define
	errDuplicateField                    // the same member twice
	errBadUnicode                        // invalid UTF-8 or a lone surrogate escape
	errValue                             // well-typed but out of range, badly formed or missing
	errBatchTooLarge                     // more than ledger.MaxBatch items (413, not 400)
)

// inputError says what is wrong with a request and where.
type inputError struct {
	kind  errKind
	field string // JSON path of the offending member, e.g. "transfers[3].amount"; "" for the whole body
	msg   string
}

func (e *inputError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return e.field + ": " + e.msg
}

// scanner walks a JSON document held in memory. Strings it returns alias
// either the input or its scratch buffer and are valid only until the next
// call; callers copy what they keep.
type scanner struct {
	buf []byte
	pos int
	tmp []byte // scratch for strings with escapes
	// arena gathers the strings of one object, to be made into one string.
	arena []byte
	item  int // index of the batch item being read, or -1; only used to name fields in errors
}

func newScanner(b []byte) scanner { return scanner{buf: b, item: -1} }

// path names field for an error message, inside the current batch item if any.
func (s *scanner) path(field string) string { return fieldPath(s.item, field) }

// fieldPath names field of batch item (or of the body when item is -1) for
// an error message; field "" names the item or the body itself.
func fieldPath(item int, field string) string {
	if item < 0 {
		if field == "" {
			return "body"
		}
		return field
	}
	p := "transfers[" + strconv.Itoa(item) + "]"
	if field == "" {
		return p
	}
	return p + "." + field
}

func (s *scanner) fail(kind errKind, field, msg string) *inputError {
	return &inputError{kind: kind, field: s.path(field), msg: msg}
}

// syntaxError reports malformed JSON at the cursor.
func (s *scanner) syntaxError() *inputError {
	if s.pos >= len(s.buf) {
		return &inputError{kind: errSyntax, msg: "malformed JSON: unexpected end of body"}
	}
	return &inputError{kind: errSyntax, msg: "malformed JSON at byte offset " + strconv.Itoa(s.pos)}
}

// skipSpace moves past JSON whitespace (and nothing else: no BOM, no comments).
func (s *scanner) skipSpace() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it, or 0 at the end.
func (s *scanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.buf) {
		return 0
	}
	return s.buf[s.pos]
}

// atEnd reports whether only whitespace is left. (peek's 0 is no proof: the
// input may hold a NUL byte.)
func (s *scanner) atEnd() bool {
	s.skipSpace()
	return s.pos >= len(s.buf)
}

// end checks that nothing but whitespace follows the document.
func (s *scanner) end() *inputError {
	if !s.atEnd() {
		return &inputError{kind: errSyntax, msg: "unexpected data after the JSON object at byte offset " + strconv.Itoa(s.pos)}
	}
	return nil
}

// startsValue reports whether c can begin a JSON value; it decides between a
// type error (a value of another kind) and a syntax error (no value at all).
func startsValue(c byte) bool {
	switch c {
	case '{', '[', '"', 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// wrongType reports a value of the wrong JSON type for field, or malformed
// JSON if there is no value at all.
func (s *scanner) wrongType(field, want string) *inputError {
	if !startsValue(s.peek()) {
		return s.syntaxError()
	}
	return s.fail(errType, field, "must be "+want)
}

// literal consumes word (true, false, null) at the cursor.
func (s *scanner) literal(word string) bool {
	if len(s.buf)-s.pos < len(word) || string(s.buf[s.pos:s.pos+len(word)]) != word {
		return false
	}
	s.pos += len(word)
	return true
}

// null consumes a null at the cursor if there is one. Null means "absent"
// for every optional member, as it does for encoding/json.
func (s *scanner) null() (bool, *inputError) {
	if s.peek() != 'n' {
		return false, nil
	}
	if !s.literal("null") {
		return false, s.syntaxError()
	}
	return true, nil
}

// openObject consumes the '{' that starts an object named field.
func (s *scanner) openObject(field string) *inputError {
	c := s.peek()
	if c == 0 && s.item < 0 && field == "" && isBlank(s.buf) {
		return &inputError{kind: errSyntax, field: "body", msg: "is empty; a JSON object is required"}
	}
	if c != '{' {
		return s.wrongType(field, "a JSON object")
	}
	s.pos++
	return nil
}

// member reads the next member name of an object opened by openObject and
// the ':' after it. It returns ok=false after consuming the closing '}'.
// *first must be true for the first call on each object.
func (s *scanner) member(first *bool) (key []byte, ok bool, err *inputError) {
	c := s.peek()
	if *first {
		*first = false
		if c == '}' {
			s.pos++
			return nil, false, nil
		}
	} else {
		switch c {
		case '}':
			s.pos++
			return nil, false, nil
		case ',':
			s.pos++
			c = s.peek()
		default:
			return nil, false, s.syntaxError()
		}
	}
	if c != '"' {
		return nil, false, s.syntaxError()
	}
	if key, err = s.str(); err != nil {
		return nil, false, err
	}
	if s.peek() != ':' {
		return nil, false, s.syntaxError()
	}
	s.pos++
	return key, true, nil
}

// element prepares to read the next element of an array whose '[' has been
// consumed; it returns false after consuming the closing ']'.
func (s *scanner) element(first *bool) (bool, *inputError) {
	c := s.peek()
	if c == ']' && *first {
		s.pos++
		return false, nil
	}
	if *first {
		*first = false
		return true, nil
	}
	switch c {
	case ']':
		s.pos++
		return false, nil
	case ',':
		s.pos++
		return true, nil
	}
	return false, s.syntaxError()
}

// strChar marks the bytes a string may hold as they are: printable ASCII other
// than '"' and '\\'. Everything else takes the slower checks.
var strChar = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads the string at the cursor, which must be at its opening quote, and
// returns its unescaped contents.
func (s *scanner) str() ([]byte, *inputError) {
	start := s.pos + 1
	i := start
	for i < len(s.buf) {
		c := s.buf[i]
		if strChar[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			s.pos = i + 1
			return s.buf[start:i], nil
		case c == '\\':
			s.tmp = append(s.tmp[:0], s.buf[start:i]...)
			s.pos = i
			return s.strEscaped()
		case c < 0x20:
			s.pos = i
			return nil, s.syntaxError()
		}
		n, err := s.utf8At(i)
		if err != nil {
			return nil, err
		}
		i += n
	}
	s.pos = len(s.buf)
	return nil, s.syntaxError()
}

// utf8At validates the multi-byte UTF-8 sequence at buf[i] and returns its length.
func (s *scanner) utf8At(i int) (int, *inputError) {
	r, n := utf8.DecodeRune(s.buf[i:])
	if r == utf8.RuneError && n == 1 {
		return 0, &inputError{kind: errBadUnicode, msg: "invalid UTF-8 in a string at byte offset " + strconv.Itoa(i)}
	}
	return n, nil
}

// strEscaped finishes a string that holds escapes, building it in s.tmp.
// The cursor is inside the string, at a byte not yet copied.
func (s *scanner) strEscaped() ([]byte, *inputError) {
	for s.pos < len(s.buf) {
		c := s.buf[s.pos]
		switch {
		case strChar[c]:
			s.tmp = append(s.tmp, c)
			s.pos++
		case c == '"':
			s.pos++
			return s.tmp, nil
		case c == '\\':
			if err := s.escape(); err != nil {
				return nil, err
			}
		case c < 0x20:
			return nil, s.syntaxError()
		default:
			n, err := s.utf8At(s.pos)
			if err != nil {
				return nil, err
			}
			s.tmp = append(s.tmp, s.buf[s.pos:s.pos+n]...)
			s.pos += n
		}
	}
	return nil, s.syntaxError()
}

// escapes maps the byte after a backslash to what it stands for; 0 means the
// escape is \u or invalid.
var escapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape decodes the escape sequence at the cursor into s.tmp.
func (s *scanner) escape() *inputError {
	if s.pos+1 >= len(s.buf) {
		s.pos = len(s.buf)
		return s.syntaxError()
	}
	if e := escapes[s.buf[s.pos+1]]; e != 0 {
		s.tmp = append(s.tmp, e)
		s.pos += 2
		return nil
	}
	if s.buf[s.pos+1] != 'u' {
		s.pos++
		return s.syntaxError()
	}
	r, err := s.unicodeEscape()
	if err != nil {
		return err
	}
	s.tmp = utf8.AppendRune(s.tmp, r)
	return nil
}

// unicodeEscape decodes \uXXXX at the cursor, joining a surrogate pair. A lone
// surrogate is refused: it names no character, and encoding/json would turn
// it into U+FFFD behind the client's back.
func (s *scanner) unicodeEscape() (rune, *inputError) {
	hi, err := s.hex4()
	if err != nil {
		return 0, err
	}
	if hi < 0xD800 || hi > 0xDFFF {
		return hi, nil
	}
	at := s.pos - 6
	if hi <= 0xDBFF && s.pos+1 < len(s.buf) && s.buf[s.pos] == '\\' && s.buf[s.pos+1] == 'u' {
		lo, err := s.hex4()
		if err != nil {
			return 0, err
		}
		if lo >= 0xDC00 && lo <= 0xDFFF {
			return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00), nil
		}
	}
	return 0, &inputError{kind: errBadUnicode, msg: "unpaired UTF-16 surrogate escape at byte offset " + strconv.Itoa(at)}
}

// hex4 decodes the four hex digits of the \u escape at the cursor.
func (s *scanner) hex4() (rune, *inputError) {
	if len(s.buf)-s.pos < 6 {
		s.pos = len(s.buf)
		return 0, s.syntaxError()
	}
	var r rune
	for _, c := range s.buf[s.pos+2 : s.pos+6] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, s.syntaxError()
		}
		r = r<<4 | rune(d)
	}
	s.pos += 6
	return r, nil
}

// stringValue reads the string member field; null=true means it was null.
func (s *scanner) stringValue(field string) (v []byte, null bool, err *inputError) {
	if null, err = s.null(); null || err != nil {
		return nil, null, err
	}
	if s.peek() != '"' {
		return nil, false, s.wrongType(field, "a string")
	}
	v, err = s.str()
	return v, false, err
}

// boolValue reads the boolean member field.
func (s *scanner) boolValue(field string) (v, null bool, err *inputError) {
	switch s.peek() {
	case 'n':
		null, err = s.null()
		return false, null, err
	case 't':
		if s.literal("true") {
			return true, false, nil
		}
	case 'f':
		if s.literal("false") {
			return false, false, nil
		}
	default:
		return false, false, s.wrongType(field, "true or false")
	}
	return false, false, s.syntaxError()
}

// intValue reads the member field, which must be a JSON number written as an
// integer (no fraction, no exponent: 1.0 and 1e3 are refused so that what a
// client sends is exactly what is stored) that fits in an int64.
func (s *scanner) intValue(field string) (v int64, null bool, err *inputError) {
	c := s.peek()
	if c == 'n' {
		null, err = s.null()
		return 0, null, err
	}
	if c != '-' && (c < '0' || c > '9') {
		return 0, false, s.wrongType(field, "an integer")
	}
	neg := c == '-'
	if neg {
		s.pos++
	}
	digits := s.pos
	if !s.number() {
		return 0, false, s.syntaxError()
	}
	v, ok, integer := parseInt(s.buf[digits:s.pos], neg)
	if !integer {
		return 0, false, s.fail(errType, field, "must be an integer (no fraction or exponent)")
	}
	if !ok {
		return 0, false, s.fail(errValue, field, "is out of range")
	}
	return v, false, nil
}

// parseInt converts the digits of a well-formed JSON number (without its
// sign) to an int64. integer is false if the number has a fraction or an
// exponent; ok is false if it does not fit.
func parseInt(digits []byte, neg bool) (v int64, ok, integer bool) {
	const limit = 1 << 63 // magnitude of math.MinInt64
	var u uint64
	overflow := false
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false, false
		}
		if u > limit/10 || u*10+uint64(d-'0') > limit {
			overflow = true
			continue
		}
		u = u*10 + uint64(d-'0')
	}
	if overflow || (!neg && u == limit) {
		return 0, false, true
	}
	if neg {
		return int64(-u), true, true
	}
	return int64(u), true, true
}

// number consumes the unsigned part of a JSON number (after any '-'),
// following RFC 8259's grammar exactly.
func (s *scanner) number() bool {
	b, i := s.buf, s.pos
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digitsEnd(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digitsEnd(b, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digitsEnd(b, i)
		if j == i {
			return false
		}
		i = j
	}
	s.pos = i
	return true
}

// digitsEnd returns the index just past the run of digits starting at i.
func digitsEnd(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
