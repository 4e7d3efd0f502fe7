package social

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newUsers(t *testing.T, names ...string) *State {
	t.Helper()
	s := NewState()
	for _, n := range names {
		u, err := s.NewUser(User{Username: n, Name: n})
		if err != nil {
			t.Fatalf("NewUser(%s): %v", n, err)
		}
		s.AddUser(u)
	}
	return s
}

func codeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func TestNewUser(t *testing.T) {
	s := newUsers(t, "alice")
	for _, c := range []struct {
		u    User
		code Code
	}{
		{User{Username: "alice", Name: "A"}, CodeExists},
		{User{Username: "al", Name: "A"}, CodeInvalid},
		{User{Username: "Alice", Name: "A"}, CodeInvalid},
		{User{Username: "bob", Name: ""}, CodeInvalid},
		{User{Username: "bob", Name: "a\nb"}, CodeInvalid},
	} {
		if _, err := s.NewUser(c.u); codeOf(err) != c.code {
			t.Errorf("NewUser(%+v): %v, want code %d", c.u, err, c.code)
		}
	}
	u, err := s.NewUser(User{Username: "bob", Name: "Bob"})
	if err != nil || u.ID != 2 {
		t.Errorf("NewUser(bob) = %v, %v; want id 2", u, err)
	}
}

func TestFriendship(t *testing.T) {
	s := newUsers(t, "ann", "bob", "cat")
	r, err := s.FriendRequest(1, 2, t0)
	if err != nil || r.StatusFor(1) != StatusWaiting || r.StatusFor(2) != StatusNotAnswer {
		t.Fatalf("request: %+v %v", r, err)
	}
	s.SetRelation(r)
	if again, _ := s.FriendRequest(1, 2, t0.Add(time.Hour)); again != r {
		t.Errorf("asking again changed the request: %+v", again)
	}
	if _, err := s.Accept(1, 2, t0); codeOf(err) != CodeNoRequest {
		t.Errorf("the requester accepting their own request: %v", err)
	}
	if _, err := s.FriendRequest(1, 1, t0); codeOf(err) != CodeSelf {
		t.Errorf("self request: %v", err)
	}
	if _, err := s.FriendRequest(1, 9, t0); codeOf(err) != CodeNotFound {
		t.Errorf("request to nobody: %v", err)
	}
	r, err = s.Accept(2, 1, t0)
	if err != nil {
		t.Fatal(err)
	}
	s.SetRelation(r)
	if !s.AreFriends(1, 2) || len(s.Friends(2)) != 1 || s.Friends(2)[0].Status != StatusFriend {
		t.Errorf("not friends after accept: %+v", s.Friends(2))
	}
	if _, err := s.FriendRequest(2, 1, t0); codeOf(err) != CodeExists {
		t.Errorf("request between friends: %v", err)
	}
	// Crossing requests make friends; a rejection removes the request.
	r, _ = s.FriendRequest(3, 1, t0)
	s.SetRelation(r)
	r, _ = s.Reject(1, 3)
	s.SetRelation(r)
	if _, ok := s.Relation(1, 3); ok || len(s.Friends(3)) != 0 {
		t.Errorf("rejected request still there")
	}
}

func TestMessagesAndUnread(t *testing.T) {
	s := newUsers(t, "ann", "bob", "cat")
	if _, err := s.NewText(1, 2, "hi", t0); codeOf(err) != CodeNotFriends {
		t.Errorf("text to a non-friend: %v", err)
	}
	r, _ := s.FriendRequest(1, 2, t0)
	s.SetRelation(r)
	r, _ = s.Accept(2, 1, t0)
	s.SetRelation(r)
	if _, err := s.NewText(1, 2, "", t0); codeOf(err) != CodeInvalid {
		t.Errorf("empty text: %v", err)
	}
	var last Message
	for i, from := range []UserID{1, 1, 2, 1} {
		m, err := s.NewText(from, 3-from, "x", t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if m.Seq != uint64(i+1) {
			t.Errorf("message %d numbered %d", i, m.Seq)
		}
		s.AddMessage(m)
		last = m
	}
	// A transfer shows in a conversation whether or not the pair are friends.
	tm := s.NewTransfer(1, 3, 50, "t1", "gift", t0)
	if tm.Seq != 1 || tm.Kind != KindTransfer {
		t.Errorf("transfer message %+v", tm)
	}
	s.AddMessage(tm)
	c, _ := s.Conversation(1, 2)
	if c.Unread(2) != 3 || c.Unread(1) != 1 {
		t.Errorf("unread: b %d (want 3), a %d (want 1)", c.Unread(2), c.Unread(1))
	}
	second := Message{Seq: 2, Sent: [2]uint64{2, 0}}
	mark, changed, err := s.MarkRead(2, 1, second)
	if err != nil || !changed {
		t.Fatal(err)
	}
	s.SetReadMark(2, 1, mark)
	if c.Unread(2) != 1 {
		t.Errorf("b's unread after reading 2: %d, want 1", c.Unread(2))
	}
	if _, changed, _ := s.MarkRead(2, 1, Message{Seq: 1}); changed {
		t.Errorf("read mark moved backwards")
	}
	if _, _, err := s.MarkRead(2, 1, Message{Seq: last.Seq + 1}); codeOf(err) != CodeNotFound {
		t.Errorf("marking a future message: %v", err)
	}
	list := s.ChatFriends(1)
	if len(list) != 1 || list[0].User.ID != 2 || list[0].Last.Seq != 4 {
		t.Errorf("chat friends of a: %+v (c is no friend)", list)
	}
}
