package auth

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// LimitConfig sizes the login rate limit: each username and each client
// address may fail Burst attempts in a row, then one per 1/Rate seconds.
type LimitConfig struct {
	Rate  rate.Limit
	Burst int
	// Keys bounds how many usernames and addresses are tracked; the least
	// recently seen are forgotten first.
	Keys int
}

// DefaultLimit allows 10 failed attempts in a row, then one every 6 s,
// per username and per address, tracking 100,000 of each.
var DefaultLimit = LimitConfig{Rate: rate.Limit(1.0 / 6), Burst: 10, Keys: 100_000}

// LoginLimiter rate-limits password attempts per username and per client
// address. Only failures count: an attempt is admitted while both buckets
// hold a token, and a failed one takes a token from each. A user who knows
// their password is never locked out and many users behind one address can
// all sign in, while guessing from one address, or at one account from many
// addresses, is slowed to Rate. Attempts admitted together before any of
// them failed all run, so the burst can be exceeded by the number of
// attempts in flight at once.
type LoginLimiter struct {
	cfg    LimitConfig
	mu     sync.Mutex
	byUser *lru.Cache[string, *rate.Limiter]
	byAddr *lru.Cache[string, *rate.Limiter]
}

// NewLoginLimiter returns a limiter with cfg.
func NewLoginLimiter(cfg LimitConfig) *LoginLimiter {
	users, _ := lru.New[string, *rate.Limiter](max(cfg.Keys, 1)) // errors only on a size < 1
	addrs, _ := lru.New[string, *rate.Limiter](max(cfg.Keys, 1))
	return &LoginLimiter{cfg: cfg, byUser: users, byAddr: addrs}
}

// Admit reports whether an attempt on username from addr may run: false if
// either has failed too often lately.
func (l *LoginLimiter) Admit(username, addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	return l.limiter(l.byUser, username).TokensAt(now) >= 1 && l.limiter(l.byAddr, addr).TokensAt(now) >= 1
}

// Failed counts a failed attempt against username and addr.
func (l *LoginLimiter) Failed(username, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.limiter(l.byUser, username).AllowN(now, 1)
	l.limiter(l.byAddr, addr).AllowN(now, 1)
}

func (l *LoginLimiter) limiter(c *lru.Cache[string, *rate.Limiter], key string) *rate.Limiter {
	if lim, ok := c.Get(key); ok {
		return lim
	}
	lim := rate.NewLimiter(l.cfg.Rate, l.cfg.Burst)
	c.Add(key, lim)
	return lim
}
