package social

import (
	"cmp"
	"slices"
)

// State is the social graph and the head of every conversation.
type State struct {
	users     map[UserID]*User
	byName    map[string]*User
	relations map[Pair]*Relation
	// peers lists, per user, the users they have a relation with, each
	// with what the friend lists read of the pair: reading them through
	// the relations and convs maps cost two lookups per friend, most of
	// GetChatFriendList's own time (cache misses, with thousands of users).
	peers  map[UserID]map[UserID]*peerLink
	convs  map[Pair]*Conversation
	online map[UserID]int
	lastID UserID
}

// NewState returns an empty State.
func NewState() *State {
	return &State{
		users:     make(map[UserID]*User),
		byName:    make(map[string]*User),
		relations: make(map[Pair]*Relation),
		peers:     make(map[UserID]map[UserID]*peerLink),
		convs:     make(map[Pair]*Conversation),
		online:    make(map[UserID]int),
	}
}

// NewUser decides a registration: it checks the fields and that the
// username is free, and assigns the next id. The caller adds the user
// with AddUser once it is durable; registrations must be serialised
// between NewUser and AddUser.
func (s *State) NewUser(u User) (User, error) {
	switch {
	case !ValidUsername(u.Username):
		return User{}, errorf(CodeInvalid, "username must be %d to %d characters of a-z 0-9 _ . -", MinUsername, MaxUsername)
	case !ValidName(u.Name):
		return User{}, errorf(CodeInvalid, "name must be 1 to %d printable characters", MaxName)
	}
	if _, taken := s.byName[u.Username]; taken {
		return User{}, errorf(CodeExists, "username %q is taken", u.Username)
	}
	u.ID = s.lastID + 1
	return u, nil
}

// AddUser adds a user.
func (s *State) AddUser(u User) {
	p := &u
	s.users[u.ID] = p
	s.byName[u.Username] = p
	s.lastID = max(s.lastID, u.ID)
}

// User returns the user id.
func (s *State) User(id UserID) (*User, bool) {
	u, ok := s.users[id]
	return u, ok
}

// UserByName returns the user called username.
func (s *State) UserByName(username string) (*User, bool) {
	u, ok := s.byName[username]
	return u, ok
}

// Users returns the number of users.
func (s *State) Users() int { return len(s.users) }

// SetOnline counts u's open streams up (delta 1) or down (-1).
func (s *State) SetOnline(u UserID, delta int) {
	n := s.online[u] + delta
	if n <= 0 {
		delete(s.online, u)
		return
	}
	s.online[u] = n
}

// Online reports whether u has a stream open.
func (s *State) Online(u UserID) bool { return s.online[u] > 0 }

// Friend is one line of a friend list.
type Friend struct {
	User   *User
	Status FriendStatus
}

// Friends lists u's friends and open requests, by username; users u is
// unfriended with are not listed.
func (s *State) Friends(u UserID) []Friend {
	out := make([]Friend, 0, len(s.peers[u]))
	for _, l := range s.peers[u] {
		if l.rel.State == RelationUnfriended {
			continue
		}
		out = append(out, Friend{User: l.user, Status: l.rel.StatusFor(u)})
	}
	slices.SortFunc(out, func(a, b Friend) int { return cmp.Compare(a.User.Username, b.User.Username) })
	return out
}

// ChatFriend is one line of a chat friend list.
type ChatFriend struct {
	User *User
	// Status is StatusFriend, or StatusUnfriended for a former friend.
	Status FriendStatus
	// Last is the newest message of the pair; nil if they have none.
	Last   *Message
	Unread uint64
}

// ChatFriends lists u's friends and former friends (unfriended) by their
// newest message, newest first; those without messages come last, by
// username.
func (s *State) ChatFriends(u UserID) []ChatFriend {
	out := make([]ChatFriend, 0, len(s.peers[u]))
	for _, l := range s.peers[u] {
		if l.rel.State != RelationFriends && l.rel.State != RelationUnfriended {
			continue
		}
		cf := ChatFriend{User: l.user, Status: l.rel.StatusFor(u)}
		if c := l.conv; c != nil {
			cf.Last = &c.Last
			cf.Unread = c.Unread(u)
		}
		out = append(out, cf)
	}
	slices.SortFunc(out, compareChatFriends)
	return out
}

func compareChatFriends(a, b ChatFriend) int {
	switch {
	case a.Last != nil && b.Last != nil:
		// Newest first; the pair's seq numbers do not compare across
		// conversations, times do.
		if c := b.Last.At.Compare(a.Last.At); c != 0 {
			return c
		}
	case a.Last != nil:
		return -1
	case b.Last != nil:
		return 1
	}
	return cmp.Compare(a.User.Username, b.User.Username)
}
