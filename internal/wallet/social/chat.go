package social

import "time"

// Kind says what a message is.
type Kind uint8

// Message kinds, named as in the API.
const (
	KindText Kind = iota + 1
	KindTransfer
)

// Message is one entry of a conversation.
type Message struct {
	// Seq numbers the conversation's messages from 1, in commit order.
	Seq      uint64
	From, To UserID
	Kind     Kind
	Text     string
	// Amount and TransferID are set on KindTransfer messages.
	Amount     int64
	TransferID string
	At         time.Time
	// Sent counts the messages the pair's Lo and Hi had sent in the
	// conversation up to and including this one; unread counts are
	// differences of these.
	Sent [2]uint64
}

// ReadMark is how far one user has read a conversation.
type ReadMark struct {
	// Seq is the newest message read.
	Seq uint64
	// PeerSent is the other user's Sent count at Seq.
	PeerSent uint64
}

// Conversation is the head of a pair's conversation: its newest message
// and how far each side has read. The messages themselves are in storage.
type Conversation struct {
	Pair Pair
	Last Message
	// Read is indexed like Message.Sent.
	Read [2]ReadMark
}

// Unread is how many of the peer's messages u has not read.
func (c *Conversation) Unread(u UserID) uint64 {
	side := c.Pair.side(u)
	return c.Last.Sent[1-side] - c.Read[side].PeerSent
}

// NewText decides a text message from one user to another: they must be
// friends. The caller adds it with AddMessage once it is durable; messages
// of one pair must be serialised between NewText and AddMessage.
func (s *State) NewText(from, to UserID, text string, at time.Time) (Message, error) {
	if !ValidText(text) {
		return Message{}, errorf(CodeInvalid, "text must be 1 to %d bytes of UTF-8", MaxText)
	}
	if _, ok := s.users[to]; !ok {
		return Message{}, errorf(CodeNotFound, "user %d not found", to)
	}
	if !s.AreFriends(from, to) {
		return Message{}, errorf(CodeNotFriends, "user %d is not your friend", to)
	}
	return s.next(Message{From: from, To: to, Kind: KindText, Text: text, At: at}), nil
}

// NewTransfer decides the message that shows a committed transfer in the
// pair's conversation; friends or not, the pair sees it.
func (s *State) NewTransfer(from, to UserID, amount int64, transferID, text string, at time.Time) Message {
	return s.next(Message{From: from, To: to, Kind: KindTransfer, Amount: amount, TransferID: transferID, Text: text, At: at})
}

// next numbers m as the pair's next message.
func (s *State) next(m Message) Message {
	p := PairOf(m.From, m.To)
	if c, ok := s.convs[p]; ok {
		m.Seq = c.Last.Seq + 1
		m.Sent = c.Last.Sent
	} else {
		m.Seq = 1
	}
	m.Sent[p.side(m.From)]++
	return m
}

// AddMessage applies a decided message.
func (s *State) AddMessage(m Message) {
	p := PairOf(m.From, m.To)
	c, ok := s.convs[p]
	if !ok {
		c = &Conversation{Pair: p}
		s.setConv(c)
	}
	c.Last = m
}

// Conversation returns the head of the conversation of a and b.
func (s *State) Conversation(a, b UserID) (*Conversation, bool) {
	c, ok := s.convs[PairOf(a, b)]
	return c, ok
}

// MarkRead decides u marking the conversation with peer read up to m, a
// message of that conversation. Marks only move forward: marking an older
// message keeps the current mark (changed is false).
func (s *State) MarkRead(u, peer UserID, m Message) (mark ReadMark, changed bool, err error) {
	c, ok := s.convs[PairOf(u, peer)]
	if !ok || m.Seq == 0 || m.Seq > c.Last.Seq {
		return ReadMark{}, false, errorf(CodeNotFound, "no message %d with user %d", m.Seq, peer)
	}
	side := c.Pair.side(u)
	cur := c.Read[side]
	if m.Seq <= cur.Seq {
		return cur, false, nil
	}
	return ReadMark{Seq: m.Seq, PeerSent: m.Sent[1-side]}, true, nil
}

// SetReadMark applies a decided read mark.
func (s *State) SetReadMark(u, peer UserID, mark ReadMark) {
	if c, ok := s.convs[PairOf(u, peer)]; ok {
		c.Read[c.Pair.side(u)] = mark
	}
}

// LoadConversation installs a conversation read back from storage.
func (s *State) LoadConversation(c Conversation) {
	s.setConv(&c)
}

// setConv makes c the pair's conversation, for its peer links too.
func (s *State) setConv(c *Conversation) {
	s.convs[c.Pair] = c
	if l := s.peers[c.Pair.Lo][c.Pair.Hi]; l != nil {
		l.conv = c
	}
	if l := s.peers[c.Pair.Hi][c.Pair.Lo]; l != nil {
		l.conv = c
	}
}
