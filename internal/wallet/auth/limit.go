package auth

import (
	"net/netip"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// LimitConfig sizes the login rate limit: a source may fail Burst
// attempts in a row at one username, then one per 1/Rate seconds; and
// sourceFactor times as many at all usernames together.
type LimitConfig struct {
	Rate  rate.Limit
	Burst int
	// Keys bounds how many sources and (username, source) pairs are
	// tracked; the least recently seen are forgotten first.
	Keys int
}

// sourceFactor is how many more failures a source may make at all
// usernames than at one: users behind one address (an office, a carrier's
// NAT) mistype their own passwords without locking each other out.
const sourceFactor = 10

// DefaultLimit allows 10 failed attempts in a row, then one every 6 s,
// per username from one source, and ten times that per source, tracking
// 100,000 of each.
var DefaultLimit = LimitConfig{Rate: rate.Limit(1.0 / 6), Burst: 10, Keys: 100_000}

// LoginLimiter rate-limits password attempts by their source: the client's
// address, or its /64 for IPv6, which one client commonly holds whole.
// Failures are counted per (username, source) and per source, never per
// username alone, so that nobody can lock a user out by failing at their
// name: a user who knows their password gets in from their own address
// whatever others try, while guessing from one source is slowed to Rate per
// username and sourceFactor × Rate in all. Only failures count: an attempt
// is admitted while both buckets hold a token, and a failed one takes a
// token from each. Attempts admitted together before any of them failed
// all run, so the burst can be exceeded by the number of attempts in
// flight at once.
type LoginLimiter struct {
	cfg      LimitConfig
	mu       sync.Mutex
	byPair   *lru.Cache[string, *rate.Limiter]
	bySource *lru.Cache[string, *rate.Limiter]
}

// NewLoginLimiter returns a limiter with cfg.
func NewLoginLimiter(cfg LimitConfig) *LoginLimiter {
	pairs, _ := lru.New[string, *rate.Limiter](max(cfg.Keys, 1)) // errors only on a size < 1
	sources, _ := lru.New[string, *rate.Limiter](max(cfg.Keys, 1))
	return &LoginLimiter{cfg: cfg, byPair: pairs, bySource: sources}
}

// Admit reports whether an attempt on username from addr may run: false if
// that source has failed too often lately, at username or in all.
func (l *LoginLimiter) Admit(username, addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	pair, src := l.limiters(username, addr)
	return pair.TokensAt(now) >= 1 && src.TokensAt(now) >= 1
}

// Failed counts a failed attempt on username from addr, made now.
func (l *LoginLimiter) Failed(username, addr string) { l.FailedAt(username, addr, time.Now()) }

// FailedAt counts a failed attempt on username from addr, made at at: a
// cluster node counts the failures every node appends to the cluster's
// social log, each with the time its node saw it.
func (l *LoginLimiter) FailedAt(username, addr string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pair, src := l.limiters(username, addr)
	pair.AllowN(at, 1)
	src.AllowN(at, 1)
}

// limiters returns the buckets of (username, addr's source) and of the
// source; the lock must be held.
func (l *LoginLimiter) limiters(username, addr string) (pair, src *rate.Limiter) {
	source := sourceOf(addr)
	pair = limiter(l.byPair, CountedName(username)+"\x00"+source, l.cfg.Rate, l.cfg.Burst)
	src = limiter(l.bySource, source, l.cfg.Rate*sourceFactor, l.cfg.Burst*sourceFactor)
	return pair, src
}

// maxCountedName bounds the part of a username its failures count under:
// twice the longest username, so that every name that can be someone's
// counts alone, while a name as long as a request allows costs no more
// memory here (and no more log in a cluster) than a short one.
const maxCountedName = 64

// CountedName is the part of username its failed attempts count under.
func CountedName(username string) string {
	if len(username) > maxCountedName {
		return username[:maxCountedName]
	}
	return username
}

// sourceOf is the source an address counts as: an IPv6 address's /64,
// anything else as it is.
func sourceOf(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil || !ip.Is6() || ip.Is4In6() {
		return addr
	}
	prefix, _ := ip.Prefix(64) // errors only for a bit count out of range
	return prefix.String()
}

func limiter(c *lru.Cache[string, *rate.Limiter], key string, r rate.Limit, burst int) *rate.Limiter {
	if lim, ok := c.Get(key); ok {
		return lim
	}
	lim := rate.NewLimiter(r, burst)
	c.Add(key, lim)
	return lim
}
