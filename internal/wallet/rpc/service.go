// Package rpc serves the wallet, friends and chat of docs/API.md as gRPC,
// gRPC-Web and Connect/JSON (connect-go) on surge's one port, with server
// reflection and grpc.health.v1.
//
// Each user's wallet is a ledger account ("wallet:<user id>"); transfers
// are ledger transfers. Users, friendships, conversations and read marks
// (internal/wallet/social) live in the engine's Pebble store under 's' keys and,
// whole, in memory: a change is committed to storage first and applied to
// the in-memory state only after the commit returns, so no read shows a
// change that a crash could still undo.
package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/wallet/auth"
	"github.com/surge-dev/surge/internal/wallet/social"
	"github.com/surge-dev/surge/internal/wallet/walletstore"
)

// Ledger is what the wallet needs of the ledger engine (engine.Engine).
type Ledger interface {
	CreateAccount(ctx context.Context, spec ledger.AccountSpec) (ledger.Account, bool, error)
	Account(ctx context.Context, id string) (ledger.Account, error)
	// TransferWith makes a transfer and, in the same durable batch if it
	// is new, writes the attached records.
	TransferWith(ctx context.Context, req ledger.TransferRequest, attached []store.Record) (ledger.Transfer, bool, error)
	GetTransfer(ctx context.Context, id string) (ledger.Transfer, error)
	History(ctx context.Context, accountID string, q ledger.HistoryQuery) (ledger.HistoryPage, error)
}

// Config configures a Service.
type Config struct {
	Ledger Ledger
	// Store is the engine's storage, where the social state lives.
	Store *store.Store
	// Currency of new wallets.
	Currency string
	// TokenSecret signs login tokens; nil means the secret kept in Store,
	// generated on first start, so that tokens survive restarts.
	TokenSecret []byte
	TokenTTL    time.Duration
	// BcryptCost is the cost of password hashes.
	BcryptCost int
	// MinAmount is the smallest amount Transfer accepts.
	MinAmount int64
	// Replicator, in cluster mode, orders the social changes of every node
	// (replicated.go); nil on a single node, which decides them itself.
	Replicator Replicator
	// LoginLimit rate-limits failed password attempts.
	LoginLimit auth.LimitConfig
	// Registerer receives the RPC metrics; nil means none are kept.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Service implements the four services. It is safe for concurrent use.
type Service struct {
	ledger   Ledger
	store    walletstore.Store
	currency string
	minAmt   int64
	tokens   *auth.Tokens
	hasher   auth.Hasher
	limiter  *auth.LoginLimiter
	log      *slog.Logger
	metrics  *metrics
	// repl is Config.Replicator.
	repl Replicator
	// presence is the cluster-wide presence; nil on a single node.
	presence *presence

	// mu guards state and hub. Changes are applied under it only after
	// they are durable.
	mu    sync.RWMutex
	state *social.State
	hub   hub

	// registering serialises registrations, from deciding a user's id to
	// adding the user; pairs serialises the changes of one pair of users
	// (relation, messages, read marks) from decision to apply; transfers
	// serialises the calls of one transfer id.
	registering sync.Mutex
	pairs       stripes[social.Pair]
	transfers   stripes[string]
}

// New loads the social state from cfg.Store, writes the chat message of
// any transfer a crash interrupted (see recoverTransfers; on a single
// node), and returns the Service.
func New(ctx context.Context, cfg Config) (*Service, error) {
	hasher, err := auth.NewHasher(cfg.BcryptCost)
	if err != nil {
		return nil, err
	}
	if cfg.MinAmount < 1 || cfg.MinAmount > ledger.MaxAmount {
		return nil, fmt.Errorf("rpc: minimum transfer amount must be between 1 and %d", int64(ledger.MaxAmount))
	}
	secret := cfg.TokenSecret
	if secret == nil {
		if secret, err = (walletstore.Store{Store: cfg.Store}).TokenSecret(auth.NewSecret); err != nil {
			return nil, fmt.Errorf("rpc: token secret: %w", err)
		}
	}
	tokens, err := auth.NewTokens(secret, cfg.TokenTTL)
	if err != nil {
		return nil, err
	}
	s := &Service{
		ledger: cfg.Ledger, store: walletstore.Store{Store: cfg.Store}, currency: cfg.Currency, minAmt: cfg.MinAmount,
		tokens: tokens, hasher: hasher, limiter: auth.NewLoginLimiter(cfg.LoginLimit),
		log: cfg.Logger, metrics: newMetrics(cfg.Registerer), repl: cfg.Replicator,
		state: social.NewState(), hub: newHub(),
		pairs:     newStripes(pairHash),
		transfers: newStripes(stringHash),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if err := (walletstore.Store{Store: cfg.Store}).LoadSocial(s.state); err != nil {
		return nil, fmt.Errorf("rpc: load social state: %w", err)
	}
	if s.repl != nil {
		// The cluster's intents are settled by ResolveIntents.
		s.presence, err = newPresence(cfg.Store.Secret)
		return s, err
	}
	if err := s.recoverTransfers(ctx); err != nil {
		return nil, fmt.Errorf("rpc: recover transfer messages: %w", err)
	}
	return s, nil
}

// walletPrefix starts the ledger account id of every wallet.
const walletPrefix = ledger.WalletPrefix

// walletID is the ledger account of user u.
func walletID(u social.UserID) string { return walletPrefix + strconv.FormatUint(uint64(u), 10) }

// walletOwner is the user whose wallet account is, or false for any other
// account (such as @world).
func walletOwner(account string) (social.UserID, bool) {
	rest, ok := strings.CutPrefix(account, walletPrefix)
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(rest, 10, 64)
	return social.UserID(id), err == nil && id != 0
}

// transferID is the ledger transfer id of a sender's request_id, so that
// the ledger's idempotency (same id and body: replay; other body:
// conflict) is the wallet's, per sender.
func transferID(from social.UserID, requestID string) string {
	return walletPrefix + strconv.FormatUint(uint64(from), 10) + ":" + requestID
}

// user returns user id under the read lock.
func (s *Service) user(id social.UserID) (social.User, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u, ok := s.state.User(id)
	if !ok {
		return social.User{}, false
	}
	return *u, true
}

// internal logs a fault and returns it as an INTERNAL error.
func (s *Service) internal(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if refused := storageRefusal(err); refused != nil {
		return refused
	}
	s.log.Error("wallet: "+what, "err", err)
	return errInternal
}
