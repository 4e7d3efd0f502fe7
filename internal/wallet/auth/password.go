// Package auth holds the wallet chat's credentials: password hashing
// (bcrypt), signed expiring login tokens (HMAC-SHA256 JWTs) and the login
// rate limit.
package auth

import (
	"errors"

	"golang.org/x/crypto/bcrypt"
)

// ErrBadPassword reports a password that does not match.
var ErrBadPassword = errors.New("auth: wrong password")

// Hasher hashes and checks passwords with bcrypt at a fixed cost.
type Hasher struct{ cost int }

// NewHasher returns a Hasher of the given bcrypt cost (4 to 31; 10 is
// bcrypt's default, and each step doubles a hash's time).
func NewHasher(cost int) (Hasher, error) {
	if cost < bcrypt.MinCost || cost > bcrypt.MaxCost {
		return Hasher{}, errors.New("auth: bcrypt cost must be between 4 and 31")
	}
	return Hasher{cost: cost}, nil
}

// Hash returns the bcrypt hash of password (at most 72 bytes).
func (h Hasher) Hash(password string) ([]byte, error) {
	return bcrypt.GenerateFromPassword([]byte(password), h.cost)
}

// Check returns nil if password matches hash, else ErrBadPassword.
func (h Hasher) Check(hash []byte, password string) error {
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil {
		return ErrBadPassword
	}
	return nil
}
