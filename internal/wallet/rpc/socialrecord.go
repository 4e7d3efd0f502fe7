package rpc

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// A record of the social log is a command: one type per kind (online and
// offline share one), holding the arguments its apply needs and nothing
// else. On the wire it is the format byte recordBinary, the kind's byte,
// then the kind's fields (internal/codec), each type listing its fields
// once, in one method that encodes or decodes them (carry). A record that
// begins with '{' is in the JSON format of earlier releases: an object
// with its kind under "k" and the kind's fields under the names of their
// json tags, which are there to read those records and name nothing else.

// recordBinary is the first byte of a binary record; a JSON object never
// begins with it.
const recordBinary byte = 0x01

// opKind names what a command asks for: its byte on the wire.
type opKind uint8

const (
	opRegister opKind = iota + 1
	opRelation
	opText
	opMarkRead
	opRemind
	opIntent      // a transfer is about to be submitted to the ledger
	opTransferMsg // a transfer is posted: its TRANSFER message
	opDropIntent  // a transfer was not made
	opOnline      // a node incarnation holds a user's stream (presence.go)
	opOffline     // it holds no stream of the user any more
	opSnapshot    // it holds exactly Users; Start: it just started
	opBeat        // it is alive
	opLoginFailed // a password attempt failed (countFailure)
)

// command is one record of the social log: one of the types below.
type command interface {
	kind() opKind
	// carry encodes or decodes the command's fields (codec.Fields).
	carry(f *codec.Fields)
}

// The commands, each with the fields its apply reads.
type (
	// registerOp registers User with its password hash; the log gives
	// its id.
	registerOp struct {
		User social.User `json:"u"`
	}
	// relationOp is Me's Action on the pair with Peer.
	relationOp struct {
		At     time.Time     `json:"at"`
		Me     social.UserID `json:"me"`
		Peer   social.UserID `json:"peer"`
		Action relAction     `json:"a"`
	}
	// textOp is a text from Me to Peer.
	textOp struct {
		At   time.Time     `json:"at"`
		Me   social.UserID `json:"me"`
		Peer social.UserID `json:"peer"`
		Text string        `json:"text"`
	}
	// markReadOp marks Me's conversation with Peer read up to message
	// UpTo (0: its last).
	markReadOp struct {
		Me   social.UserID `json:"me"`
		Peer social.UserID `json:"peer"`
		UpTo uint64        `json:"upto"`
	}
	// remindOp is Me's reminder to Peer, under Me's RequestID; its
	// Transfer is the key of the reminder's id.
	remindOp struct {
		payment
		RequestID string `json:"rid"`
	}
	// intentOp says ledger transfer Transfer is about to be submitted.
	intentOp struct {
		At       time.Time `json:"at"`
		Transfer string    `json:"t"`
	}
	// transferMsgOp is posted transfer Transfer's message, with its
	// amount and memo (Text).
	transferMsgOp struct {
		payment
	}
	// dropIntentOp says ledger transfer Transfer was not made.
	dropIntentOp struct {
		Transfer string `json:"t"`
	}
	// userPresenceOp says the incarnation holds a stream of User
	// (online) or holds none any more; online is its kind, not a field.
	userPresenceOp struct {
		presenceHead
		User   social.UserID `json:"me"`
		online bool
	}
	// snapshotOp says the incarnation holds exactly Users; Start, that
	// it just started.
	snapshotOp struct {
		presenceHead
		Users []social.UserID `json:"us"`
		Start bool            `json:"st"`
	}
	// beatOp says the incarnation is alive.
	beatOp struct {
		presenceHead
	}
	// loginFailedOp is a failed password attempt at username Login (as
	// the limiter counts it) from client address Addr.
	loginFailedOp struct {
		At    time.Time `json:"at"`
		Login string    `json:"login"`
		Addr  string    `json:"addr"`
	}
)

// payment is what a reminder and a transfer's message carry: an amount
// from Me to Peer with a text, at At, and a ledger transfer id.
type payment struct {
	At       time.Time     `json:"at"`
	Me       social.UserID `json:"me"`
	Peer     social.UserID `json:"peer"`
	Amount   int64         `json:"amount"`
	Text     string        `json:"text"`
	Transfer string        `json:"t"`
}

// presenceHead is what every presence command carries: the node and
// incarnation that appended it and the time it did.
type presenceHead struct {
	At   time.Time `json:"at"`
	Node string    `json:"n"`
	Inc  string    `json:"i"`
}

// presenceCommand is a presence command: its head, and what it says the
// incarnation holds.
type presenceCommand interface {
	command
	head() *presenceHead
}

func (*registerOp) kind() opKind    { return opRegister }
func (*relationOp) kind() opKind    { return opRelation }
func (*textOp) kind() opKind        { return opText }
func (*markReadOp) kind() opKind    { return opMarkRead }
func (*remindOp) kind() opKind      { return opRemind }
func (*intentOp) kind() opKind      { return opIntent }
func (*transferMsgOp) kind() opKind { return opTransferMsg }
func (*dropIntentOp) kind() opKind  { return opDropIntent }
func (*snapshotOp) kind() opKind    { return opSnapshot }
func (*beatOp) kind() opKind        { return opBeat }
func (*loginFailedOp) kind() opKind { return opLoginFailed }
func (o *userPresenceOp) kind() opKind {
	if o.online {
		return opOnline
	}
	return opOffline
}

func (h *presenceHead) head() *presenceHead { return h }

func (h *presenceHead) carry(f *codec.Fields) {
	f.Time(&h.At)
	f.Str(&h.Node)
	f.Str(&h.Inc)
}

func (o *registerOp) carry(f *codec.Fields) {
	f.Str(&o.User.Username)
	f.Str(&o.User.Name)
	f.Bytes(&o.User.PasswordHash)
	f.Time(&o.User.CreatedAt)
}

func (o *relationOp) carry(f *codec.Fields) {
	f.Time(&o.At)
	userID(f, &o.Me)
	userID(f, &o.Peer)
	f.Byte((*uint8)(&o.Action))
}

func (o *textOp) carry(f *codec.Fields) {
	f.Time(&o.At)
	userID(f, &o.Me)
	userID(f, &o.Peer)
	f.Str(&o.Text)
}

func (o *markReadOp) carry(f *codec.Fields) {
	userID(f, &o.Me)
	userID(f, &o.Peer)
	f.Uint64(&o.UpTo)
}

func (p *payment) carry(f *codec.Fields) {
	f.Time(&p.At)
	userID(f, &p.Me)
	userID(f, &p.Peer)
	f.Int64(&p.Amount)
	f.Str(&p.Text)
	f.Str(&p.Transfer)
}

func (o *remindOp) carry(f *codec.Fields) {
	o.payment.carry(f)
	f.Str(&o.RequestID)
}

func (o *intentOp) carry(f *codec.Fields) {
	f.Time(&o.At)
	f.Str(&o.Transfer)
}

func (o *dropIntentOp) carry(f *codec.Fields) { f.Str(&o.Transfer) }

func (o *userPresenceOp) carry(f *codec.Fields) {
	o.presenceHead.carry(f)
	userID(f, &o.User)
}

func (o *snapshotOp) carry(f *codec.Fields) {
	o.presenceHead.carry(f)
	codec.List(f, &o.Users, func(u *social.UserID) { userID(f, u) })
	f.Bool(&o.Start)
}

func (o *loginFailedOp) carry(f *codec.Fields) {
	f.Time(&o.At)
	f.Str(&o.Login)
	f.Str(&o.Addr)
}

// userID carries a user id as an unsigned varint.
func userID(f *codec.Fields, u *social.UserID) { f.Uint64((*uint64)(u)) }

// newCommand returns an empty command of kind k, nil for an unknown kind.
func newCommand(k opKind) command {
	switch k {
	case opRegister:
		return &registerOp{}
	case opRelation:
		return &relationOp{}
	case opText:
		return &textOp{}
	case opMarkRead:
		return &markReadOp{}
	case opRemind:
		return &remindOp{}
	case opIntent:
		return &intentOp{}
	case opTransferMsg:
		return &transferMsgOp{}
	case opDropIntent:
		return &dropIntentOp{}
	case opOnline, opOffline:
		return &userPresenceOp{online: k == opOnline}
	case opSnapshot:
		return &snapshotOp{}
	case opBeat:
		return &beatOp{}
	case opLoginFailed:
		return &loginFailedOp{}
	}
	return nil
}

// encodeCommand encodes c as a binary record.
func encodeCommand(c command) []byte {
	b := make([]byte, 1, 64)
	b[0] = recordBinary
	return codec.AppendOp(b, byte(c.kind()), c.carry)
}

// decodeCommand decodes a record of either format. A record cut short,
// followed by more, of an unknown format or of an unknown kind is an
// error wrapping codec.ErrCorrupt or codec.ErrUnknownOp.
func decodeCommand(b []byte) (command, error) {
	switch {
	case len(b) == 0:
		return nil, fmt.Errorf("rpc: an empty social log record: %w", codec.ErrCorrupt)
	case b[0] == '{':
		return decodeJSONCommand(b)
	case b[0] != recordBinary:
		return nil, fmt.Errorf("rpc: a social log record of format %#x: %w", b[0], codec.ErrCorrupt)
	}
	var c command
	k, err := codec.DecodeOp(b[1:], func(k byte, f *codec.Fields) bool {
		if c = newCommand(opKind(k)); c != nil {
			c.carry(f)
		}
		return c != nil
	})
	if err != nil {
		return nil, fmt.Errorf("rpc: decoding a social log record of kind %d: %w", k, err)
	}
	return c, nil
}

// decodeJSONCommand decodes a JSON record: its kind first, then the
// kind's fields.
func decodeJSONCommand(b []byte) (command, error) {
	var k struct {
		Kind opKind `json:"k"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("rpc: decoding a JSON social log record: %w: %w", codec.ErrCorrupt, err)
	}
	c := newCommand(k.Kind)
	if c == nil {
		return nil, fmt.Errorf("rpc: a JSON social log record of kind %d: %w", k.Kind, codec.ErrUnknownOp)
	}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("rpc: decoding a JSON social log record of kind %d: %w: %w", k.Kind, codec.ErrCorrupt, err)
	}
	return c, nil
}
