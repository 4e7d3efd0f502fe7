package auth

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestTokens(t *testing.T) {
	secret := []byte(strings.Repeat("k", SecretSize))
	tok, err := NewTokens(secret, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := tok.Issue(42, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if id, err := tok.Verify(s); err != nil || id != 42 {
		t.Errorf("Verify = %d, %v; want 42", id, err)
	}
	expired, _, _ := tok.Issue(42, time.Now().Add(-2*time.Hour))
	other, _ := NewTokens([]byte(strings.Repeat("x", SecretSize)), time.Hour)
	forged, _, _ := other.Issue(42, time.Now())
	for name, bad := range map[string]string{"expired": expired, "forged": forged, "garbage": "a.b.c", "tampered": s[:len(s)-2] + "xx"} {
		if _, err := tok.Verify(bad); err != ErrBadToken {
			t.Errorf("%s token: %v, want ErrBadToken", name, err)
		}
	}
	if _, err := NewTokens([]byte("short"), time.Hour); err == nil {
		t.Errorf("short secret accepted")
	}
}

// A token verified once is answered from the cache, but only until it
// expires.
func TestVerifiedTokenExpires(t *testing.T) {
	tok, err := NewTokens([]byte(strings.Repeat("k", SecretSize)), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	tok.now = func() time.Time { return clock }
	s, exp, err := tok.Issue(7, clock)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // parsed, then cached
		if id, err := tok.Verify(s); err != nil || id != 7 {
			t.Fatalf("Verify = %d, %v; want 7", id, err)
		}
	}
	clock = exp
	if _, err := tok.Verify(s); err != ErrBadToken {
		t.Fatalf("cached token at its expiry: %v, want ErrBadToken", err)
	}
	if _, err := tok.Verify(s); err != ErrBadToken {
		t.Fatalf("expired token verified again: %v, want ErrBadToken", err)
	}
}

func TestHasher(t *testing.T) {
	h, err := NewHasher(4)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := h.Hash("password1")
	if err != nil {
		t.Fatal(err)
	}
	if h.Check(hash, "password1") != nil || h.Check(hash, "password2") != ErrBadPassword {
		t.Errorf("password check wrong")
	}
	if _, err := NewHasher(3); err == nil {
		t.Errorf("cost 3 accepted")
	}
}

func TestLoginLimiter(t *testing.T) {
	l := NewLoginLimiter(LimitConfig{Rate: rate.Every(time.Hour), Burst: 3, Keys: 10})
	for i := range 3 {
		if !l.Admit("alice", "1.2.3.4") {
			t.Fatalf("attempt %d refused", i)
		}
		l.Failed("alice", "1.2.3.4")
	}
	if l.Admit("alice", "1.2.3.4") {
		t.Errorf("the failing address admitted for alice after 3 failures")
	}
	if !l.Admit("alice", "5.6.7.8") {
		t.Errorf("alice refused from her own address: another's failures locked her out")
	}
	if !l.Admit("bob", "5.6.7.8") {
		t.Errorf("an unrelated user and address refused")
	}
	// Successes do not count.
	for range 10 {
		if !l.Admit("carol", "9.9.9.9") {
			t.Fatalf("successful logins were limited")
		}
	}
}

// A username longer than any can be counts under its first
// maxCountedName bytes: a flood of long names from one source shares one
// bucket per prefix and keeps no more of each name than that.
func TestLoginLimiterBoundsLongNames(t *testing.T) {
	l := NewLoginLimiter(LimitConfig{Rate: rate.Every(time.Hour), Burst: 1, Keys: 100})
	long := strings.Repeat("x", 64<<10)
	l.Failed(long+"a", "1.2.3.4")
	if l.Admit(long+"b", "1.2.3.4") {
		t.Errorf("another long name with the same first %d bytes admitted after a failure", maxCountedName)
	}
	if n := len(CountedName(long)); n != maxCountedName {
		t.Errorf("a %d-byte name counts under %d bytes, want %d", len(long), n, maxCountedName)
	}
	for _, k := range l.byPair.Keys() {
		if len(k) > maxCountedName+1+len("1.2.3.4") {
			t.Errorf("a pair kept under a %d-byte key", len(k))
		}
	}
}

// One source failing at many usernames is slowed too, after sourceFactor
// times a username's burst; addresses of one IPv6 /64 are one source.
func TestLoginLimiterCountsSources(t *testing.T) {
	l := NewLoginLimiter(LimitConfig{Rate: rate.Every(time.Hour), Burst: 1, Keys: 100})
	for i := range sourceFactor {
		addr := fmt.Sprintf("2001:db8::%x", i+1)
		if !l.Admit(fmt.Sprint("user", i), addr) {
			t.Fatalf("attempt %d refused", i)
		}
		l.Failed(fmt.Sprint("user", i), addr)
	}
	if l.Admit("another", "2001:db8::ffff") {
		t.Errorf("the /64 admitted after %d failures at as many users", sourceFactor)
	}
	if !l.Admit("another", "2001:db8:0:1::1") {
		t.Errorf("the next /64 refused")
	}
}
