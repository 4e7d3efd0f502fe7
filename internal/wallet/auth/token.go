package auth

import (
	"crypto/rand"
	"errors"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
	lru "github.com/hashicorp/golang-lru/v2"
)

// SecretSize is the size of a generated signing secret.
const SecretSize = 32

// issuer names surge in the tokens it signs, so a token of another system
// signed with the same secret is not taken for one of ours.
const issuer = "surge"

// ErrBadToken reports a token that is malformed, forged or expired.
var ErrBadToken = errors.New("auth: invalid or expired token")

// NewSecret returns a random signing secret.
func NewSecret() ([]byte, error) {
	b := make([]byte, SecretSize)
	_, err := rand.Read(b)
	return b, err
}

// verifiedCacheSize bounds the tokens remembered as verified: one per
// active session is plenty.
const verifiedCacheSize = 1 << 16

// Tokens signs and verifies login tokens: HS256 JWTs whose subject is the
// user id, valid for TTL.
type Tokens struct {
	secret []byte
	ttl    time.Duration
	parser *jwt.Parser
	now    func() time.Time
	// verified remembers tokens that passed verification, with their
	// user and expiry: every call carries its token, and parsing and
	// checking the HMAC again stood out in GetBalance's server profile.
	// Only tokens that verified get in, and each hit checks the expiry.
	verified *lru.Cache[string, verifiedToken]
}

type verifiedToken struct {
	user    uint64
	expires time.Time
}

// NewTokens returns Tokens signing with secret (at least 32 bytes).
func NewTokens(secret []byte, ttl time.Duration) (*Tokens, error) {
	if len(secret) < SecretSize {
		return nil, errors.New("auth: token secret must be at least 32 bytes")
	}
	if ttl <= 0 {
		return nil, errors.New("auth: token lifetime must be positive")
	}
	t := &Tokens{secret: secret, ttl: ttl, now: time.Now}
	t.parser = jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(issuer), jwt.WithExpirationRequired(), jwt.WithTimeFunc(func() time.Time { return t.now() }))
	var err error
	t.verified, err = lru.New[string, verifiedToken](verifiedCacheSize)
	return t, err
}

// Issue returns a token for user, and when it expires.
func (t *Tokens) Issue(user uint64, now time.Time) (string, time.Time, error) {
	exp := now.Add(t.ttl).Truncate(time.Second)
	claims := jwt.RegisteredClaims{
		Issuer:    issuer,
		Subject:   strconv.FormatUint(user, 10),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(exp),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(t.secret)
	return s, exp, err
}

// Verify returns the user a valid token was issued to.
func (t *Tokens) Verify(token string) (uint64, error) {
	if v, ok := t.verified.Get(token); ok {
		if t.now().Before(v.expires) {
			return v.user, nil
		}
		t.verified.Remove(token)
		return 0, ErrBadToken
	}
	var claims jwt.RegisteredClaims
	_, err := t.parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return t.secret, nil })
	if err != nil {
		return 0, ErrBadToken
	}
	id, err := strconv.ParseUint(claims.Subject, 10, 64)
	if err != nil || id == 0 {
		return 0, ErrBadToken
	}
	t.verified.Add(token, verifiedToken{user: id, expires: claims.ExpiresAt.Time})
	return id, nil
}
