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
	// Crossing requests make friends; a rejection removes the request, and
	// so does its sender withdrawing it.
	r, _ = s.FriendRequest(3, 1, t0)
	s.SetRelation(r)
	r, _ = s.Reject(1, 3)
	s.SetRelation(r)
	if _, ok := s.Relation(1, 3); ok || len(s.Friends(3)) != 0 {
		t.Errorf("rejected request still there")
	}
	if _, err := s.Reject(1, 3); codeOf(err) != CodeNoRequest {
		t.Errorf("rejecting no request: %v", err)
	}
	r, _ = s.FriendRequest(3, 1, t0)
	s.SetRelation(r)
	r, err = s.Reject(3, 1)
	if err != nil {
		t.Fatalf("withdrawing a request: %v", err)
	}
	s.SetRelation(r)
	if _, ok := s.Relation(1, 3); ok || len(s.Friends(1)) != 1 {
		t.Errorf("withdrawn request still there: %+v", s.Friends(1))
	}
	if _, err := s.Reject(1, 2); codeOf(err) != CodeNoRequest {
		t.Errorf("rejecting a friend: %v", err)
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

// The friend lists read a pair's relation and conversation through each
// user's peer links. However the two came about, in whichever order (a
// transfer before the friendship, a conversation loaded from storage
// before or after the relation, a request turned down and made again),
// the lists show the pair's current relation and newest message.
func TestFriendListsFollowEveryOrder(t *testing.T) {
	befriend := func(s *State, a, b UserID) {
		r, _ := s.FriendRequest(a, b, t0)
		s.SetRelation(r)
		r, _ = s.Accept(b, a, t0)
		s.SetRelation(r)
	}
	wantChat := func(t *testing.T, s *State, u, peer UserID, seq uint64) {
		t.Helper()
		list := s.ChatFriends(u)
		if len(list) != 1 || list[0].User.ID != peer || list[0].Last == nil || list[0].Last.Seq != seq {
			t.Fatalf("chat friends of %d: %+v, want %d with message %d", u, list, peer, seq)
		}
	}

	// A transfer, then friendship.
	s := newUsers(t, "ann", "bob")
	s.AddMessage(s.NewTransfer(1, 2, 5, "t1", "", t0))
	if list := s.ChatFriends(1); len(list) != 0 {
		t.Fatalf("chat friends before friendship: %+v", list)
	}
	befriend(s, 1, 2)
	wantChat(t, s, 1, 2, 1)
	wantChat(t, s, 2, 1, 1)
	s.AddMessage(s.NewTransfer(2, 1, 5, "t2", "", t0))
	wantChat(t, s, 1, 2, 2)

	// Loading after a restart: the conversation before the relation, and
	// after it.
	for _, convFirst := range []bool{true, false} {
		s := newUsers(t, "ann", "bob")
		conv := Conversation{Pair: PairOf(1, 2), Last: Message{Seq: 7, From: 2, To: 1, Sent: [2]uint64{3, 4}}}
		if convFirst {
			s.LoadConversation(conv)
		}
		s.SetRelation(Relation{Pair: PairOf(1, 2), State: RelationFriends, Requester: 1, Since: t0})
		if !convFirst {
			s.LoadConversation(conv)
		}
		wantChat(t, s, 1, 2, 7)
		if got := s.ChatFriends(1)[0].Unread; got != 4 {
			t.Fatalf("convFirst=%v: ann's unread %d, want 4", convFirst, got)
		}
	}

	// A request turned down, then made again and accepted.
	s = newUsers(t, "ann", "bob")
	r, _ := s.FriendRequest(1, 2, t0)
	s.SetRelation(r)
	if f := s.Friends(2); len(f) != 1 || f[0].Status != StatusNotAnswer {
		t.Fatalf("bob's friends with a request open: %+v", f)
	}
	r, _ = s.Reject(2, 1)
	s.SetRelation(r)
	if f := s.Friends(1); len(f) != 0 {
		t.Fatalf("ann's friends after the rejection: %+v", f)
	}
	befriend(s, 2, 1)
	s.AddMessage(s.NewTransfer(1, 2, 5, "t3", "", t0))
	if f := s.Friends(1); len(f) != 1 || f[0].Status != StatusFriend {
		t.Fatalf("ann's friends: %+v", f)
	}
	wantChat(t, s, 2, 1, 1)
}

// Removing a friend unfriends both users: the friend lists drop them, the
// chat lists keep the conversation as unfriended, texts are refused both
// ways (transfers still show), and either may ask to be friends again.
func TestRemoveFriend(t *testing.T) {
	s := newUsers(t, "ann", "bob", "cat")
	if _, err := s.Remove(1, 2, t0); codeOf(err) != CodeNotFriends {
		t.Errorf("removing a stranger: %v", err)
	}
	r, _ := s.FriendRequest(1, 2, t0)
	s.SetRelation(r)
	if _, err := s.Remove(1, 2, t0); codeOf(err) != CodeNotFriends {
		t.Errorf("removing an open request: %v", err)
	}
	r, _ = s.Accept(2, 1, t0)
	s.SetRelation(r)
	m, _ := s.NewText(1, 2, "hi", t0)
	s.AddMessage(m)

	r, err := s.Remove(2, 1, t0.Add(time.Minute))
	if err != nil || r.State != RelationUnfriended || r.StatusFor(1) != StatusUnfriended || r.StatusFor(2) != StatusUnfriended {
		t.Fatalf("remove: %+v %v", r, err)
	}
	s.SetRelation(r)
	if again, err := s.Remove(1, 2, t0.Add(time.Hour)); err != nil || again != r {
		t.Errorf("removing again: %+v %v, want the same relation", again, err)
	}
	for _, u := range []UserID{1, 2} {
		if f := s.Friends(u); len(f) != 0 {
			t.Errorf("friends of %d after removal: %+v", u, f)
		}
		if c := s.ChatFriends(u); len(c) != 1 || c[0].Status != StatusUnfriended || c[0].Last == nil || c[0].Last.Text != "hi" {
			t.Errorf("chat friends of %d after removal: %+v", u, c)
		}
	}
	if s.AreFriends(1, 2) {
		t.Error("still friends")
	}
	for _, from := range []UserID{1, 2} {
		if _, err := s.NewText(from, 3-from, "still there?", t0); codeOf(err) != CodeNotFriends {
			t.Errorf("text from %d after removal: %v", from, err)
		}
	}
	s.AddMessage(s.NewTransfer(1, 2, 5, "t1", "", t0))

	r, err = s.FriendRequest(1, 2, t0)
	if err != nil || r.State != RelationRequested || r.StatusFor(1) != StatusWaiting {
		t.Fatalf("asking again after removal: %+v %v", r, err)
	}
	s.SetRelation(r)
	if f := s.Friends(2); len(f) != 1 || f[0].Status != StatusNotAnswer {
		t.Errorf("bob's friends with the new request: %+v", f)
	}
	r, _ = s.Accept(2, 1, t0)
	s.SetRelation(r)
	if c := s.ChatFriends(2); len(c) != 1 || c[0].Status != StatusFriend || c[0].Last.Kind != KindTransfer {
		t.Errorf("chat friends of bob, friends again: %+v", c)
	}
}

// Only friends remind each other to pay.
func TestNewReminder(t *testing.T) {
	s := newUsers(t, "ann", "bob")
	want := Reminder{ID: 7, From: 1, To: 2, Amount: 1000, Text: "lunch", At: t0}
	for _, c := range []struct {
		r    Reminder
		code Code
	}{
		{want, CodeNotFriends},
		{Reminder{From: 1, To: 1, Amount: 1000}, CodeSelf},
		{Reminder{From: 1, To: 9, Amount: 1000}, CodeNotFound},
	} {
		if _, err := s.NewReminder(c.r); codeOf(err) != c.code {
			t.Errorf("NewReminder(%+v): %v, want code %d", c.r, err, c.code)
		}
	}
	r, _ := s.FriendRequest(1, 2, t0)
	s.SetRelation(r)
	r, _ = s.Accept(2, 1, t0)
	s.SetRelation(r)
	if got, err := s.NewReminder(want); err != nil || got != want {
		t.Errorf("NewReminder between friends: %+v %v", got, err)
	}
}
