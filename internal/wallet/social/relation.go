package social

import "time"

// Pair is an unordered pair of distinct users, kept with Lo < Hi.
type Pair struct{ Lo, Hi UserID }

// PairOf returns the pair of a and b.
func PairOf(a, b UserID) Pair {
	if a > b {
		a, b = b, a
	}
	return Pair{a, b}
}

// Other returns the member of p that is not u.
func (p Pair) Other(u UserID) UserID {
	if u == p.Lo {
		return p.Hi
	}
	return p.Lo
}

// side is 0 for p.Lo and 1 for p.Hi.
func (p Pair) side(u UserID) int {
	if u == p.Lo {
		return 0
	}
	return 1
}

// RelationState is where a pair's friendship stands.
type RelationState uint8

// Relation states; RelationNone is never stored.
const (
	RelationNone RelationState = iota
	RelationRequested
	RelationFriends
	// RelationUnfriended: the pair were friends until one of them removed
	// the other. Their conversation stays listed and readable; neither can
	// send the other a text until they are friends again.
	RelationUnfriended
)

// Relation is the friendship of a pair.
type Relation struct {
	Pair
	State RelationState
	// Requester sent the request (for RelationRequested and, historically,
	// RelationFriends), or removed the friend (RelationUnfriended).
	Requester UserID
	Since     time.Time
}

// FriendStatus is a relation as one of its two users sees it.
type FriendStatus uint8

// Friend statuses, named as in the API.
const (
	StatusFriend FriendStatus = iota + 1
	StatusWaiting
	StatusNotAnswer
	StatusUnfriended
)

// StatusFor returns how u sees r.
func (r Relation) StatusFor(u UserID) FriendStatus {
	switch {
	case r.State == RelationFriends:
		return StatusFriend
	case r.State == RelationUnfriended:
		return StatusUnfriended
	case r.Requester == u:
		return StatusWaiting
	default:
		return StatusNotAnswer
	}
}

// FriendRequest decides what u asking peer to be friends does: a new
// request (also after an unfriending), or friendship if peer had already
// asked u. Asking again while waiting changes nothing and returns the open
// request.
func (s *State) FriendRequest(u, peer UserID, now time.Time) (Relation, error) {
	if err := s.checkPeer(u, peer); err != nil {
		return Relation{}, err
	}
	r, ok := s.relations[PairOf(u, peer)]
	switch {
	case !ok || r.State == RelationUnfriended:
		return Relation{Pair: PairOf(u, peer), State: RelationRequested, Requester: u, Since: now}, nil
	case r.State == RelationFriends:
		return Relation{}, errorf(CodeExists, "already friends with user %d", peer)
	case r.Requester == u:
		return *r, nil
	default:
		return Relation{Pair: r.Pair, State: RelationFriends, Requester: r.Requester, Since: now}, nil
	}
}

// Accept decides u accepting requester's request.
func (s *State) Accept(u, requester UserID, now time.Time) (Relation, error) {
	r, err := s.pendingFrom(u, requester)
	if err != nil {
		return Relation{}, err
	}
	return Relation{Pair: r.Pair, State: RelationFriends, Requester: requester, Since: now}, nil
}

// Reject decides u turning down peer's request, or withdrawing u's own
// request to peer: either way the relation goes.
func (s *State) Reject(u, peer UserID) (Relation, error) {
	if err := s.checkPeer(u, peer); err != nil {
		return Relation{}, err
	}
	r, ok := s.relations[PairOf(u, peer)]
	if !ok || r.State != RelationRequested {
		return Relation{}, errorf(CodeNoRequest, "no pending friend request between you and user %d", peer)
	}
	return Relation{Pair: r.Pair, State: RelationNone}, nil
}

// Remove decides u removing peer from their friends, for both of them:
// the relation becomes RelationUnfriended. Removing again changes
// nothing; removing someone who is not a friend is refused.
func (s *State) Remove(u, peer UserID, now time.Time) (Relation, error) {
	if err := s.checkPeer(u, peer); err != nil {
		return Relation{}, err
	}
	r, ok := s.relations[PairOf(u, peer)]
	switch {
	case ok && r.State == RelationFriends:
		return Relation{Pair: r.Pair, State: RelationUnfriended, Requester: u, Since: now}, nil
	case ok && r.State == RelationUnfriended:
		return *r, nil
	}
	return Relation{}, errorf(CodeNotFriends, "user %d is not your friend", peer)
}

func (s *State) pendingFrom(u, requester UserID) (*Relation, error) {
	if err := s.checkPeer(u, requester); err != nil {
		return nil, err
	}
	r, ok := s.relations[PairOf(u, requester)]
	if !ok || r.State != RelationRequested || r.Requester != requester {
		return nil, errorf(CodeNoRequest, "no pending friend request from user %d", requester)
	}
	return r, nil
}

func (s *State) checkPeer(u, peer UserID) error {
	if u == peer {
		return errorf(CodeSelf, "cannot befriend yourself")
	}
	if _, ok := s.users[peer]; !ok {
		return errorf(CodeNotFound, "user %d not found", peer)
	}
	return nil
}

// SetRelation applies a decided relation; RelationNone removes it.
func (s *State) SetRelation(r Relation) {
	if r.State == RelationNone {
		delete(s.relations, r.Pair)
		delete(s.peers[r.Lo], r.Hi)
		delete(s.peers[r.Hi], r.Lo)
		return
	}
	s.relations[r.Pair] = &r
	s.link(r.Lo, r.Hi, &r)
	s.link(r.Hi, r.Lo, &r)
}

// peerLink is what u's friend lists read of u's relation with a peer.
// rel and conv are the pair's entries of relations and convs, kept in
// step by SetRelation and setConv.
type peerLink struct {
	user *User // the peer
	rel  *Relation
	conv *Conversation // nil until the pair has a message
}

func (s *State) link(u, peer UserID, r *Relation) {
	m := s.peers[u]
	if m == nil {
		m = make(map[UserID]*peerLink)
		s.peers[u] = m
	}
	m[peer] = &peerLink{user: s.users[peer], rel: r, conv: s.convs[r.Pair]}
}

// AreFriends reports whether a and b are friends.
func (s *State) AreFriends(a, b UserID) bool {
	r, ok := s.relations[PairOf(a, b)]
	return ok && r.State == RelationFriends
}

// Relation returns the relation of a and b, if any.
func (s *State) Relation(a, b UserID) (Relation, bool) {
	r, ok := s.relations[PairOf(a, b)]
	if !ok {
		return Relation{}, false
	}
	return *r, true
}
