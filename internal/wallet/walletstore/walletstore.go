package walletstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/surge-dev/surge/internal/codec"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// Social key layout (the wallet chat of docs/API.md). Every key starts with
// 's', so none can collide with the ledger's 'l' keys or the key-value
// store's "kv/". Ids are 8-byte big-endian, so a pair's messages sort by seq.
//
//	su/<user>                  user: username, name, password hash
//	sr/<lo><hi>                friendship or open request of a pair
//	sc/<lo><hi>                conversation head: read marks (and a newest seq that
//	                           loading ignores: the pair's newest sm/ key is the newest)
//	sm/<lo><hi><seq>           message
//	si/<transfer>              transfer intent (value empty), see TransferIntents
//	sq/<from><request id>      transfer reminder, by its sender's request id
//	sn/<user><at><id>          transfer reminder, under each of its two users
//	sk/token                   the secret that signs login tokens
var (
	prefixUser     = []byte("su/")
	prefixRelation = []byte("sr/")
	prefixConvHead = []byte("sc/")
	prefixMessage  = []byte("sm/")
	prefixIntent   = []byte("si/")
	keyTokenSecret = []byte("sk/token")
)

func userKey(id social.UserID) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), prefixUser...), uint64(id))
}

func pairKey(prefix []byte, p social.Pair) []byte {
	k := append(make([]byte, 0, len(prefix)+24), prefix...)
	k = binary.BigEndian.AppendUint64(k, uint64(p.Lo))
	return binary.BigEndian.AppendUint64(k, uint64(p.Hi))
}

func messageKey(p social.Pair, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(pairKey(prefixMessage, p), seq)
}

// SocialBatch writes social records into one storage batch.
type SocialBatch struct{ *pebble.Batch }

// NewSocialBatch returns an empty batch of s.
func (s Store) NewSocialBatch() SocialBatch { return SocialBatch{s.NewBatch()} }

// PutUser writes u.
func (b SocialBatch) PutUser(u *social.User) {
	var e codec.Encoder
	e.Byte(store.RecordVersion)
	e.String(u.Username)
	e.String(u.Name)
	e.String(string(u.PasswordHash))
	e.Varint(u.CreatedAt.UnixNano())
	_ = b.Set(userKey(u.ID), e.B, nil)
}

// PutRelation writes r, or deletes the pair's relation if r is RelationNone.
func (b SocialBatch) PutRelation(r *social.Relation) {
	k := pairKey(prefixRelation, r.Pair)
	if r.State == social.RelationNone {
		_ = b.Delete(k, nil)
		return
	}
	var e codec.Encoder
	e.Byte(store.RecordVersion)
	e.Byte(byte(r.State))
	e.Uvarint(uint64(r.Requester))
	e.Varint(r.Since.UnixNano())
	_ = b.Set(k, e.B, nil)
}

// PutMessage writes m, and the head of its conversation if m opens it.
// Later messages leave the head alone: loading takes the newest message
// from the messages themselves, which saves a write per message.
func (b SocialBatch) PutMessage(m *social.Message) {
	for _, r := range MessageRecords(m) {
		_ = b.Set(r.Key, r.Value, nil)
	}
}

// MessageRecords are the records PutMessage writes, for a message that
// rides in another batch: the wallet's TRANSFER message is written in the
// ledger's batch of its transfer.
func MessageRecords(m *social.Message) []store.Record {
	p := social.PairOf(m.From, m.To)
	msg := store.Record{Key: messageKey(p, m.Seq), Value: encodeMessage(m)}
	if m.Seq != 1 {
		return []store.Record{msg}
	}
	return []store.Record{msg, headRecord(p, m.Seq, [2]social.ReadMark{})}
}

// PutHead writes a conversation's head: its read marks, and its newest seq
// for older versions (loading now finds it from the messages).
func (b SocialBatch) PutHead(p social.Pair, last uint64, read [2]social.ReadMark) {
	r := headRecord(p, last, read)
	_ = b.Set(r.Key, r.Value, nil)
}

func headRecord(p social.Pair, last uint64, read [2]social.ReadMark) store.Record {
	var e codec.Encoder
	e.Byte(store.RecordVersion)
	e.Uvarint(last)
	for _, r := range read {
		e.Uvarint(r.Seq)
		e.Uvarint(r.PeerSent)
	}
	return store.Record{Key: pairKey(prefixConvHead, p), Value: e.B}
}

// TransferIntentKey is the key of transfer id's intent: the record that
// its chat message is still to be written. The ledger writes it with the
// transfer (engine.TransferWith) when the message cannot ride in the same
// batch; DeleteTransferIntent clears it.
func TransferIntentKey(id string) []byte { return store.Key(nil, prefixIntent, id) }

// DeleteTransferIntent clears a transfer intent.
func (b SocialBatch) DeleteTransferIntent(id string) { _ = b.Delete(TransferIntentKey(id), nil) }

func encodeMessage(m *social.Message) []byte {
	var e codec.Encoder
	e.Byte(store.RecordVersion)
	e.Uvarint(uint64(m.From))
	e.Uvarint(uint64(m.To))
	e.Byte(byte(m.Kind))
	e.String(m.Text)
	e.Varint(m.Amount)
	e.String(m.TransferID)
	e.Varint(m.At.UnixNano())
	e.Uvarint(m.Sent[0])
	e.Uvarint(m.Sent[1])
	return e.B
}

func decodeMessage(seq uint64, v []byte) (social.Message, error) {
	d := codec.Decoder{B: v}
	if d.Byte() != store.RecordVersion {
		return social.Message{}, codec.ErrCorrupt
	}
	m := social.Message{Seq: seq}
	m.From = social.UserID(d.Uvarint())
	m.To = social.UserID(d.Uvarint())
	m.Kind = social.Kind(d.Byte())
	m.Text = d.Str()
	m.Amount = d.Varint()
	m.TransferID = d.Str()
	m.At = time.Unix(0, d.Varint()).UTC()
	m.Sent[0] = d.Uvarint()
	m.Sent[1] = d.Uvarint()
	return m, d.Done()
}

func decodeUser(k, v []byte) (social.User, error) {
	d := codec.Decoder{B: v}
	if len(k) != len(prefixUser)+8 || d.Byte() != store.RecordVersion {
		return social.User{}, codec.ErrCorrupt
	}
	u := social.User{ID: social.UserID(binary.BigEndian.Uint64(k[len(prefixUser):]))}
	u.Username = d.Str()
	u.Name = d.Str()
	u.PasswordHash = []byte(d.Str())
	u.CreatedAt = time.Unix(0, d.Varint()).UTC()
	return u, d.Done()
}

func decodePair(prefix, k []byte) (social.Pair, error) {
	if len(k) < len(prefix)+16 {
		return social.Pair{}, codec.ErrCorrupt
	}
	k = k[len(prefix):]
	return social.Pair{Lo: social.UserID(binary.BigEndian.Uint64(k)), Hi: social.UserID(binary.BigEndian.Uint64(k[8:]))}, nil
}

func decodeRelation(k, v []byte) (social.Relation, error) {
	p, err := decodePair(prefixRelation, k)
	if err != nil {
		return social.Relation{}, err
	}
	d := codec.Decoder{B: v}
	if d.Byte() != store.RecordVersion {
		return social.Relation{}, codec.ErrCorrupt
	}
	r := social.Relation{Pair: p}
	r.State = social.RelationState(d.Byte())
	r.Requester = social.UserID(d.Uvarint())
	r.Since = time.Unix(0, d.Varint()).UTC()
	return r, d.Done()
}

// LoadSocial reads every user, relation and conversation head into st.
func (s Store) LoadSocial(st *social.State) error {
	err := s.Scan(prefixUser, store.UpperBound(prefixUser), false, func(k, v []byte) (bool, error) {
		u, err := decodeUser(k, v)
		if err != nil {
			return false, fmt.Errorf("user record %x: %w", k, err)
		}
		st.AddUser(u)
		return true, nil
	})
	if err != nil {
		return err
	}
	err = s.Scan(prefixRelation, store.UpperBound(prefixRelation), false, func(k, v []byte) (bool, error) {
		r, err := decodeRelation(k, v)
		if err != nil {
			return false, fmt.Errorf("relation record %x: %w", k, err)
		}
		st.SetRelation(r)
		return true, nil
	})
	if err != nil {
		return err
	}
	return s.loadConversations(st)
}

func (s Store) loadConversations(st *social.State) error {
	var heads []social.Conversation
	err := s.Scan(prefixConvHead, store.UpperBound(prefixConvHead), false, func(k, v []byte) (bool, error) {
		p, err := decodePair(prefixConvHead, k)
		if err != nil {
			return false, err
		}
		d := codec.Decoder{B: v}
		if d.Byte() != store.RecordVersion {
			return false, codec.ErrCorrupt
		}
		c := social.Conversation{Pair: p}
		_ = d.Uvarint() // the newest seq, as older versions wrote it
		for i := range c.Read {
			c.Read[i] = social.ReadMark{Seq: d.Uvarint(), PeerSent: d.Uvarint()}
		}
		heads = append(heads, c)
		return true, d.Done()
	})
	if err != nil {
		return fmt.Errorf("conversation heads: %w", err)
	}
	for _, c := range heads {
		m, err := s.Messages(c.Pair, math.MaxUint64, 1)
		if err != nil || len(m) == 0 {
			return fmt.Errorf("conversation %d-%d: newest message: %w", c.Pair.Lo, c.Pair.Hi, errors.Join(err, codec.ErrCorrupt))
		}
		c.Last = m[0]
		st.LoadConversation(c)
	}
	return nil
}

// Message reads message seq of pair p.
func (s Store) Message(p social.Pair, seq uint64) (social.Message, bool, error) {
	v, ok, err := s.Get(messageKey(p, seq))
	if !ok || err != nil {
		return social.Message{}, false, err
	}
	m, err := decodeMessage(seq, v)
	return m, err == nil, err
}

// Messages returns up to limit messages of pair p with seq below before,
// newest first.
func (s Store) Messages(p social.Pair, before uint64, limit int) ([]social.Message, error) {
	out := make([]social.Message, 0, limit)
	lower, upper := messageKey(p, 1), messageKey(p, before)
	err := s.Scan(lower, upper, true, func(k, v []byte) (bool, error) {
		m, err := decodeMessage(binary.BigEndian.Uint64(k[len(k)-8:]), v)
		if err != nil {
			return false, err
		}
		out = append(out, m)
		return len(out) < limit, nil
	})
	return out, err
}

// TransferIntents lists the transfer ids whose intent is still recorded:
// transfers that were submitted to the ledger while their chat message was
// not yet written.
func (s Store) TransferIntents() ([]string, error) {
	var ids []string
	err := s.Scan(prefixIntent, store.UpperBound(prefixIntent), false, func(k, _ []byte) (bool, error) {
		ids = append(ids, string(k[len(prefixIntent):]))
		return true, nil
	})
	return ids, err
}

// TokenSecret returns the secret that signs login tokens, creating it with
// generate (and making it durable) on first use.
func (s Store) TokenSecret(generate func() ([]byte, error)) ([]byte, error) {
	return s.Secret(keyTokenSecret, generate)
}
