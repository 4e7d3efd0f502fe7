package ledgerapi

import (
	"time"

	"github.com/surge-dev/surge/internal/ledger"
)

// fields is a set of request members, one bit each; it records which were
// present (and not null) and catches a member given twice.
type fields uint16

// Members of the transfer object.
const (
	fID fields = 1 << iota
	fFrom
	fTo
	fAmount
	fCurrency
	fMemo
	fPending
	fTimeout
)

// Members of the other request objects (the account object also uses fID
// and fCurrency).
const (
	fOverdraft fields = 1 << (iota + 8)
	fMetadata
	fAtomic
	fTransfers
)

// transferInput is a transfer object as decoded, before validation.
type transferInput struct {
	id, from, to, currency, memo string
	amount, timeoutMS            int64
	pending                      bool
	has                          fields
}

func transferField(key []byte) fields {
	switch string(key) {
	case "id":
		return fID
	case "from":
		return fFrom
	case "to":
		return fTo
	case "amount":
		return fAmount
	case "currency":
		return fCurrency
	case "memo":
		return fMemo
	case "pending":
		return fPending
	case "timeout_ms":
		return fTimeout
	}
	return 0
}

// unknownField reports a member the contract does not define.
func (s *scanner) unknownField(key []byte) *inputError {
	return s.fail(errUnknownField, truncate(string(key), 64), "unknown field")
}

// duplicateField reports a member given twice.
func (s *scanner) duplicateField(key []byte) *inputError {
	return s.fail(errDuplicateField, truncate(string(key), 64), "given more than once")
}

// nextField reads the next member name of an object of known members,
// resolving it with lookup and refusing unknown and repeated ones. It
// returns 0 at the end of the object.
func (s *scanner) nextField(first *bool, seen *fields, lookup func([]byte) fields) (fields, *inputError) {
	key, ok, err := s.member(first)
	if err != nil || !ok {
		return 0, err
	}
	f := lookup(key)
	if f == 0 {
		return 0, s.unknownField(key)
	}
	if *seen&f != 0 {
		return 0, s.duplicateField(key)
	}
	*seen |= f
	return f, nil
}

// Slots of the string members of a transfer in strSpans.
const (
	slotID = iota
	slotFrom
	slotTo
	slotCurrency
	slotMemo
	numSlots
)

// strSpans locates each string member of a transfer in the scanner's arena.
type strSpans [numSlots]struct{ start, end int }

// transfer decodes the transfer object at the cursor.
//
// Its string members are gathered in s.arena and become one string, sliced
// up: one allocation per item instead of up to five. A batch item is a few
// dozen bytes, so strings allocated per member made up a third of the cost of
// decoding a batch. They share a lifetime anyway, as parts of one transfer.
func (s *scanner) transfer() (in transferInput, err *inputError) {
	if err = s.openObject(""); err != nil {
		return in, err
	}
	var seen fields
	var spans strSpans
	s.arena = s.arena[:0]
	for first := true; ; {
		f, err := s.nextField(&first, &seen, transferField)
		if err != nil {
			return in, err
		}
		if f == 0 {
			in.setStrings(string(s.arena), &spans)
			return in, nil
		}
		present, err := s.transferMember(&in, f, &spans)
		if err != nil {
			return in, err
		}
		if present {
			in.has |= f
		}
	}
}

// setStrings cuts the string members out of all.
func (in *transferInput) setStrings(all string, sp *strSpans) {
	in.id = all[sp[slotID].start:sp[slotID].end]
	in.from = all[sp[slotFrom].start:sp[slotFrom].end]
	in.to = all[sp[slotTo].start:sp[slotTo].end]
	in.currency = all[sp[slotCurrency].start:sp[slotCurrency].end]
	in.memo = all[sp[slotMemo].start:sp[slotMemo].end]
}

// transferMember decodes the value of member f into in, or into s.arena at
// sp for a string.
func (s *scanner) transferMember(in *transferInput, f fields, sp *strSpans) (bool, *inputError) {
	switch f {
	case fID:
		return s.arenaString("id", &sp[slotID])
	case fFrom:
		return s.arenaString("from", &sp[slotFrom])
	case fTo:
		return s.arenaString("to", &sp[slotTo])
	case fAmount:
		return s.setInt("amount", &in.amount)
	case fCurrency:
		return s.arenaString("currency", &sp[slotCurrency])
	case fMemo:
		return s.arenaString("memo", &sp[slotMemo])
	case fPending:
		return s.setBool("pending", &in.pending)
	default: // fTimeout
		return s.setInt("timeout_ms", &in.timeoutMS)
	}
}

// arenaString appends the string member field to s.arena unless it is null,
// recording where it went in span.
func (s *scanner) arenaString(field string, span *struct{ start, end int }) (bool, *inputError) {
	v, null, err := s.stringValue(field)
	if err != nil || null {
		return false, err
	}
	span.start = len(s.arena)
	s.arena = append(s.arena, v...)
	span.end = len(s.arena)
	return true, nil
}

// setString stores the string member field in dst unless it is null.
func (s *scanner) setString(field string, dst *string) (bool, *inputError) {
	v, null, err := s.stringValue(field)
	if err != nil || null {
		return false, err
	}
	*dst = string(v)
	return true, nil
}

// setInt stores the integer member field in dst unless it is null.
func (s *scanner) setInt(field string, dst *int64) (bool, *inputError) {
	v, null, err := s.intValue(field)
	if err != nil || null {
		return false, err
	}
	*dst = v
	return true, nil
}

// setBool stores the boolean member field in dst unless it is null.
func (s *scanner) setBool(field string, dst *bool) (bool, *inputError) {
	v, null, err := s.boolValue(field)
	if err != nil || null {
		return false, err
	}
	*dst = v
	return true, nil
}

// request validates a decoded transfer (item i of a batch, or -1) and turns
// it into a ledger request. from == to is left to the caller, since it is
// not an invalid_argument but a same_account error.
func (in *transferInput) request(item int) (ledger.TransferRequest, *inputError) {
	bad := func(field, msg string) (ledger.TransferRequest, *inputError) {
		return ledger.TransferRequest{}, &inputError{kind: errValue, field: fieldPath(item, field), msg: msg}
	}
	switch {
	case in.has&fID != 0 && !ValidID(in.id):
		return bad("id", msgID)
	case in.has&fID != 0 && ledger.ServerTransferID(in.id):
		return bad("id", msgServerTransfer)
	case in.has&fFrom == 0:
		return bad("from", msgRequired)
	case !ValidID(in.from):
		return bad("from", msgID)
	case in.has&fTo == 0:
		return bad("to", msgRequired)
	case !ValidID(in.to):
		return bad("to", msgID)
	case in.has&fAmount == 0:
		return bad("amount", msgRequired)
	case !validAmount(in.amount):
		return bad("amount", msgAmount)
	case in.has&fCurrency != 0 && !ValidCurrency(in.currency):
		return bad("currency", msgCurrency)
	case len(in.memo) > ledger.MaxMemoLength:
		return bad("memo", msgMemo)
	case in.timeoutMS < 0 || in.timeoutMS > maxTimeoutMS:
		return bad("timeout_ms", msgTimeout)
	case in.timeoutMS > 0 && !in.pending:
		return bad("timeout_ms", "is only allowed with \"pending\": true")
	}
	return ledger.TransferRequest{
		ID: in.id, From: in.from, To: in.to, Amount: in.amount,
		Currency: in.currency, Memo: in.memo, Pending: in.pending,
		Timeout: time.Duration(in.timeoutMS) * time.Millisecond,
	}, nil
}

// decodeTransfer decodes and validates the body of POST /v1/transfers.
func decodeTransfer(body []byte) (ledger.TransferRequest, *inputError) {
	s := newScanner(body)
	s.arena = make([]byte, 0, len(body)) // room for all its strings: no regrowth
	in, err := s.transfer()
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return ledger.TransferRequest{}, err
	}
	return in.request(-1)
}

func amountField(key []byte) fields {
	if string(key) == "amount" {
		return fAmount
	}
	return 0
}

func noField([]byte) fields { return 0 }

// decodePost decodes the optional body of POST /v1/transfers/{id}/post. It
// returns 0 (post everything held) for an empty body or no amount.
func decodePost(body []byte) (int64, *inputError) {
	if isBlank(body) {
		return 0, nil
	}
	s := newScanner(body)
	if err := s.openObject(""); err != nil {
		return 0, err
	}
	var amount int64
	var seen fields
	present := false
	for first := true; ; {
		f, err := s.nextField(&first, &seen, amountField)
		if err != nil {
			return 0, err
		}
		if f == 0 {
			break
		}
		if present, err = s.setInt("amount", &amount); err != nil {
			return 0, err
		}
	}
	if err := s.end(); err != nil {
		return 0, err
	}
	if present && !validAmount(amount) {
		return 0, &inputError{kind: errValue, field: "amount", msg: msgAmount}
	}
	return amount, nil
}

// decodeEmpty accepts an empty body or an empty JSON object, the bodies of
// routes that take no input (void).
func decodeEmpty(body []byte) *inputError {
	if isBlank(body) {
		return nil
	}
	s := newScanner(body)
	if err := s.openObject(""); err != nil {
		return err
	}
	var seen fields
	first := true
	if _, err := s.nextField(&first, &seen, noField); err != nil {
		return err
	}
	return s.end()
}

// isBlank reports whether b holds only JSON whitespace.
func isBlank(b []byte) bool {
	s := newScanner(b)
	return s.atEnd()
}
