// Package social is the domain of surge's wallet chat (docs/API.md): users,
// friendships, conversations, messages and unread counts, as plain
// in-memory state with no I/O.
//
// A State answers every question the RPC layer asks and decides every
// change it makes: a Decide method (FriendRequest, NewMessage, ...) checks
// a change against the state and returns it without applying it; the
// caller makes it durable and only then applies it (SetRelation,
// AddMessage, ...), so the state never shows a change that could still be
// lost. A State is not safe for concurrent use; the caller guards it.
package social

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// UserID identifies a user. IDs are assigned from 1 upwards.
type UserID uint64

// Limits on what users may send.
const (
	MinUsername = 3
	MaxUsername = 32
	MaxName     = 64
	MinPassword = 8
	// MaxPassword is bcrypt's limit: it ignores bytes beyond 72.
	MaxPassword = 72
	MaxText     = 4096
)

// User is a registered user.
type User struct {
	ID           UserID
	Username     string
	Name         string
	PasswordHash []byte
	CreatedAt    time.Time
}

// Code classifies a refused change; the RPC layer maps it to a status.
type Code uint8

// Codes of refused changes.
const (
	CodeInvalid    Code = iota + 1 // malformed input
	CodeNotFound                   // no such user or message
	CodeExists                     // username taken, already friends
	CodeNotFriends                 // a text message to someone who is not a friend
	CodeNoRequest                  // accept or reject without a pending request
	CodeSelf                       // befriending oneself
)

// Error is a refused change.
type Error struct {
	Code   Code
	Detail string
}

func (e *Error) Error() string { return e.Detail }

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// ValidUsername reports whether s is 3 to 32 characters of a-z 0-9 _ . -.
func ValidUsername(s string) bool {
	if len(s) < MinUsername || len(s) > MaxUsername {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// ValidName reports whether s is a display name: 1 to 64 characters of
// valid UTF-8 with no control characters.
func ValidName(s string) bool {
	if s == "" || !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxName {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// ValidPassword reports whether p has an acceptable length.
func ValidPassword(p string) bool { return len(p) >= MinPassword && len(p) <= MaxPassword }

// ValidText reports whether s is a sendable message text.
func ValidText(s string) bool { return s != "" && len(s) <= MaxText && utf8.ValidString(s) }
