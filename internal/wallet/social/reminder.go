package social

import "time"

// Reminder is one user asking another to transfer them an amount: VMR
// chat's transfer reminder. It moves no money; the user asked pays, or
// not, with an ordinary transfer.
type Reminder struct {
	// ID is the reminder's number, the same for both users.
	ID uint64
	// From asks to be paid; To is asked to pay.
	From, To UserID
	Amount   int64
	Text     string
	At       time.Time
}

// NewReminder decides r.From reminding r.To: they must be friends. The
// caller checks the amount and text, and makes the reminder durable.
func (s *State) NewReminder(r Reminder) (Reminder, error) {
	if r.From == r.To {
		return Reminder{}, errorf(CodeSelf, "cannot remind yourself")
	}
	if _, ok := s.users[r.To]; !ok {
		return Reminder{}, errorf(CodeNotFound, "user %d not found", r.To)
	}
	if !s.AreFriends(r.From, r.To) {
		return Reminder{}, errorf(CodeNotFriends, "user %d is not your friend", r.To)
	}
	return r, nil
}
