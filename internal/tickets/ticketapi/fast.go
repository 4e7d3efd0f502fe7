package ticketapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/surge-dev/surge/internal/jsonw"
	"github.com/surge-dev/surge/internal/tickets"
	"github.com/valyala/fastjson"
)

// The reservation routes carry a flash sale: a million requests in seconds.
// Their bodies are decoded with fastjson's reusable parser and their
// replies appended with jsonw, where encoding/json's reflection and
// per-request decoder cost a fifth of the server's CPU in a spike (pprof).
// The rules are encoding/json's with DisallowUnknownFields, which the other
// routes use: one JSON object, no unknown fields, null as "absent", numbers
// into ints only when integral; FuzzReservationBody compares the two.

var parsers fastjson.ParserPool

var bodyBufs = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 512)) }}

// decodeReserve decodes a reservation request body.
func decodeReserve(body []byte) (reserveJSON, error) {
	// The parser lets raw control characters through in strings; the
	// validator applies all of RFC 8259.
	if err := fastjson.ValidateBytes(body); err != nil {
		return reserveJSON{}, err
	}
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil {
		return reserveJSON{}, err
	}
	obj, err := v.Object()
	if err != nil {
		return reserveJSON{}, errors.New("want a JSON object")
	}
	var out reserveJSON
	obj.Visit(func(key []byte, v *fastjson.Value) {
		if err == nil {
			err = out.set(string(key), v)
		}
	})
	return out, err
}

// set decodes one member of a reservation request.
func (b *reserveJSON) set(key string, v *fastjson.Value) error {
	var err error
	switch key {
	case "userId":
		b.UserID, err = stringOf(v)
	case "eventId":
		b.EventID, err = stringOf(v)
	case "areaId":
		b.AreaID, err = stringOf(v)
	case "type":
		var kind string
		kind, err = stringOf(v)
		b.Type = tickets.Kind(kind)
	case "numOfSeats":
		b.NumOfSeats, err = intOf(v)
	case "numOfSeat":
		b.NumOfSeat, err = intOf(v)
	case "seats":
		b.Seats, err = seatsOf(v)
	default:
		return fmt.Errorf("unknown field %q", key)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

func stringOf(v *fastjson.Value) (string, error) {
	if v.Type() == fastjson.TypeNull {
		return "", nil
	}
	s, err := v.StringBytes()
	if err != nil {
		return "", errors.New("want a string")
	}
	return string(s), nil
}

func intOf(v *fastjson.Value) (int, error) {
	if v.Type() == fastjson.TypeNull {
		return 0, nil
	}
	if v.Type() != fastjson.TypeNumber {
		return 0, errors.New("want an integer")
	}
	n, err := v.Int()
	if err != nil {
		return 0, errors.New("want an integer in range")
	}
	return n, nil
}

func seatsOf(v *fastjson.Value) ([]tickets.Seat, error) {
	if v.Type() == fastjson.TypeNull {
		return nil, nil
	}
	list, err := v.Array()
	if err != nil {
		return nil, errors.New("want an array of {row, col}")
	}
	seats := make([]tickets.Seat, len(list))
	for i, item := range list {
		obj, err := item.Object()
		if err != nil {
			return nil, fmt.Errorf("[%d]: want an object", i)
		}
		obj.Visit(func(key []byte, v *fastjson.Value) {
			if err != nil {
				return
			}
			switch string(key) {
			case "row":
				seats[i].Row, err = intOf(v)
			case "col":
				seats[i].Col, err = intOf(v)
			default:
				err = fmt.Errorf("unknown field %q", key)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return seats, nil
}

// appendReservation appends r as ticket-master's ReservationBean, plus
// surge's fields; it encodes exactly what reservationOf marshals.
func appendReservation(b []byte, r *tickets.Reservation) []byte {
	j := reservationOf(r)
	b = jsonw.AppendStr(b, `{"reservationId":`, j.ReservationID)
	b = jsonw.AppendStr(b, `,"userId":`, j.UserID)
	b = jsonw.AppendStr(b, `,"eventId":`, j.EventID)
	b = jsonw.AppendStr(b, `,"areaId":`, j.AreaID)
	b = jsonw.AppendInt(b, `,"numOfSeats":`, int64(j.NumOfSeats))
	b = jsonw.AppendInt(b, `,"numOfSeat":`, int64(j.NumOfSeat))
	b = jsonw.AppendStr(b, `,"type":`, string(j.Type))
	b = append(b, `,"seats":[`...)
	for i, s := range j.Seats {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.AppendInt(b, `{"row":`, int64(s.Row))
		b = append(jsonw.AppendInt(b, `,"col":`, int64(s.Col)), '}')
	}
	b = jsonw.AppendStr(b, `],"state":`, string(j.State))
	b = jsonw.AppendStr(b, `,"failedReason":`, j.FailedReason)
	if j.HoldUntil != nil {
		b = appendRFC3339(b, `,"holdUntil":`, *j.HoldUntil)
	}
	if j.PaymentID != "" {
		b = jsonw.AppendStr(b, `,"paymentId":`, j.PaymentID)
	}
	return append(b, '}')
}

// appendRFC3339 appends t as encoding/json writes a time.Time.
func appendRFC3339(b []byte, name string, t time.Time) []byte {
	b = append(jsonw.AppendKey(b, name), '"')
	return append(t.AppendFormat(b, time.RFC3339Nano), '"')
}

// writeReservation writes r as a 200 JSON reply.
func writeReservation(w http.ResponseWriter, r *tickets.Reservation) int {
	buf := encodeReservation(r)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	bodyBufs.Put(buf)
	return http.StatusOK
}

// encodeReservation encodes r into a pooled buffer; the caller puts it back.
func encodeReservation(r *tickets.Reservation) *bytes.Buffer {
	buf := bodyBufs.Get().(*bytes.Buffer)
	buf.Reset()
	buf.Write(appendReservation(buf.AvailableBuffer(), r))
	return buf
}
