package wallet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// UsersCacheAuto is the --users-cache value that keeps the cache in the
// user's cache directory, under a name made from the settings it is for;
// UsersCacheOff keeps none.
const (
	UsersCacheAuto = "auto"
	UsersCacheOff  = "off"
)

// tokenMargin is how long a cached token must still be valid to be used:
// longer than any run.
const tokenMargin = 6 * time.Hour

// cacheChecks is how many cached users a run checks against the server
// before trusting the cache.
const cacheChecks = 8

// usersCache is what a run keeps of its users for the next run against the
// same server with the same settings: the setup (registration with a
// bcrypt hash each, friendships, funding, history) is done; only the
// tokens and friend lists are needed again.
type usersCache struct {
	// Key names the settings the users were made with (see cacheKey).
	Key   string       `json:"key"`
	Users []cachedUser `json:"users"`
}

type cachedUser struct {
	ID      uint64 `json:"id"`
	Token   string `json:"token"`
	Friends []int  `json:"friends"`
}

// cacheKey names what makes a set of users: the server and every setting
// of the setup.
func cacheKey(c WalletConfig) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%d\x00%d\x00%d\x00%s",
		c.Target, c.UserPrefix, c.Password, c.Users, c.Friends, c.Fund, c.Currency))
	return hex.EncodeToString(h[:12])
}

// cachePath is where the users of c are kept, or "" for no cache.
func cachePath(c WalletConfig) (string, error) {
	switch c.UsersCache {
	case UsersCacheOff:
		return "", nil
	case UsersCacheAuto, "":
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, "surge", "bench-wallet-"+cacheKey(c)+".json"), nil
	}
	return c.UsersCache, nil
}

// loadCachedUsers returns the cached users of c, once a sample of them has
// answered GetBalance with its token; ok is false when there is no usable
// cache (none, other settings, tokens about to expire, a server that no
// longer knows them).
func loadCachedUsers(ctx context.Context, conn *grpc.ClientConn, c WalletConfig, path string) (users []benchUser, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var cache usersCache
	if json.Unmarshal(b, &cache) != nil || cache.Key != cacheKey(c) || len(cache.Users) != c.Users {
		return nil, false
	}
	users = make([]benchUser, len(cache.Users))
	for i, u := range cache.Users {
		if !tokenLasts(u.Token) {
			return nil, false
		}
		users[i] = benchUser{id: u.ID, token: u.Token, friends: u.Friends,
			ctx: metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+u.Token)}
	}
	for k := range cacheChecks {
		u := users[k*(len(users)-1)/(cacheChecks-1)]
		if conn.Invoke(u.ctx, walletMethod("GetBalance"), &walletv1.GetBalanceRequest{}, &walletv1.GetBalanceResponse{}) != nil {
			return nil, false
		}
	}
	return users, true
}

// tokenLasts reports whether token's expiry (read, not verified: the
// server verifies) is more than tokenMargin away.
func tokenLasts(token string) bool {
	claims := jwt.RegisteredClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(token, &claims); err != nil || claims.ExpiresAt == nil {
		return false
	}
	return time.Until(claims.ExpiresAt.Time) > tokenMargin
}

// saveCachedUsers writes users to path for the next run, readable by this
// user only: it holds their tokens.
func saveCachedUsers(c WalletConfig, path string, users []benchUser) error {
	cache := usersCache{Key: cacheKey(c), Users: make([]cachedUser, len(users))}
	for i, u := range users {
		cache.Users[i] = cachedUser{ID: u.id, Token: u.token, Friends: u.friends}
	}
	b, err := json.Marshal(cache)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return nil
}
