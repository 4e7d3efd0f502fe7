package social

import (
	"cmp"
	"slices"
)

// Search returns at most limit users that match, by username. It reads
// every user: for a search box, not a hot path.
func (s *State) Search(match func(*User) bool, limit int) []*User {
	var out []*User
	for _, u := range s.users {
		if match(u) {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *User) int { return cmp.Compare(a.Username, b.Username) })
	return out[:min(len(out), limit)]
}
