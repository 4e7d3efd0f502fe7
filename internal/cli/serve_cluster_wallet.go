package cli

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/cluster/node"
	"github.com/surge-dev/surge/internal/cluster/sociallog"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/wallet/auth"
	"github.com/surge-dev/surge/internal/wallet/rpc"
	"github.com/surge-dev/surge/internal/wallet/vmr"
	"github.com/surge-dev/surge/internal/wallet/walletstore"
)

// Intents of wallet transfers older than intentAge are settled by every
// node's sweep, every intentSweep: far longer than a transfer takes to be
// answered (or to fail over, docs/CLUSTER.md), so that a live call's own
// follow-up comes first.
const (
	intentAge   = 2 * time.Minute
	intentSweep = 30 * time.Second
)

// clusterWallet is the wallet, friends and chat of a cluster node: the
// social state in --data/social, applied from the cluster's social log
// (docs/CLUSTER.md), money on the cluster's ledger. It returns once the
// node's copy has caught up with the log; stop closes it.
type clusterWallet struct {
	svc  *rpc.Service
	face *vmr.Face
	log  *sociallog.Log
	db   *store.Store
}

func openClusterWallet(ctx context.Context, c serveConfig, k kafkalog.Config, n *node.Node, holdSecret []byte, reg prometheus.Registerer, logger *slog.Logger) (*clusterWallet, error) {
	secret, err := clusterTokenSecret(c, holdSecret)
	if err != nil {
		return nil, err
	}
	db, err := store.Open(filepath.Join(c.data, "social"), store.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	w := &clusterWallet{db: db}
	snaps := sociallog.Snapshots{State: socialState{walletstore.Store{Store: db}}, Every: sociallog.DefaultSnapshotEvery}
	if w.log, err = sociallog.Open(ctx, k, snaps, logger); err != nil {
		db.Close()
		return nil, err
	}
	if err := w.restore(ctx, k); err != nil {
		w.close()
		return nil, err
	}
	w.svc, err = rpc.New(ctx, rpc.Config{
		Ledger: n.Ledger(), Store: db, Currency: c.currency, Replicator: w.log,
		TokenSecret: secret, TokenTTL: c.wallet.tokenTTL, BcryptCost: c.wallet.bcryptCost,
		MinAmount: c.wallet.minAmount, LoginLimit: auth.DefaultLimit,
		Registerer: reg, Logger: logger,
	})
	if err == nil {
		err = w.catchUp(ctx, k)
	}
	if err == nil {
		err = w.svc.StartPresence(ctx)
	}
	if err != nil {
		w.close()
		return nil, err
	}
	w.face = vmr.New(w.svc.Local(), vmr.Options{Origins: c.cors, Logger: logger})
	go repeat(ctx, intentSweep, nil, logger, "cluster: settling wallet transfer intents", func(ctx context.Context) error {
		return w.svc.ResolveIntents(ctx, time.Now().Add(-intentAge))
	})
	go repeat(ctx, rpc.PresenceBeat, w.svc.PresenceOwed(), logger, "cluster: renewing the node's presence", w.svc.BeatPresence)
	return w, nil
}

// restore loads the newest snapshot of the social state into the node's
// copy if the copy is empty or the log no longer holds the records after
// it (sociallog.Log.Restore).
func (w *clusterWallet) restore(ctx context.Context, k kafkalog.Config) error {
	applied, err := walletstore.Store{Store: w.db}.Applied()
	if err != nil {
		return fmt.Errorf("wallet: reading the applied offset: %w", err)
	}
	_, err = w.log.Restore(ctx, k, applied)
	return err
}

// socialState is the node's copy of the social state, as the social log
// snapshots and restores it.
type socialState struct{ walletstore.Store }

func (s socialState) Snapshot() (sociallog.Pairs, error) { return s.SocialView() }

func (s socialState) Restore(each func(put func(key, value []byte) error) error) error {
	return s.ReplaceSocial(each)
}

// catchUp applies the social log from the store's offset on, until it has
// every record appended before.
func (w *clusterWallet) catchUp(ctx context.Context, k kafkalog.Config) error {
	applied, err := w.svc.Applied()
	if err != nil {
		return fmt.Errorf("wallet: reading the applied offset: %w", err)
	}
	return w.log.Run(ctx, k, applied+1, w.svc.Apply)
}

// repeat runs fn every interval and whenever wake fires (nil: never),
// logging its errors as what, until ctx ends.
func repeat(ctx context.Context, interval time.Duration, wake <-chan struct{}, logger *slog.Logger, what string, fn func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			logger.Warn(what, "err", err)
		}
	}
}

func (w *clusterWallet) close() {
	w.log.Close()
	_ = w.db.Close()
}

// clusterTokenSecret is --token-secret, or else a key derived from the
// cluster's hold secret (HKDF-SHA256): every node signs login tokens
// alike, and a token from one node is good on all.
func clusterTokenSecret(c serveConfig, holdSecret []byte) ([]byte, error) {
	if c.wallet.tokenSecret != "" {
		return []byte(c.wallet.tokenSecret), nil
	}
	return hkdf.Key(sha256.New, holdSecret, nil, "surge wallet login tokens", 32)
}
