package sociallog

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/surge-dev/surge/internal/cluster/kafkalog"
	"github.com/surge-dev/surge/internal/engine"
	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/gen/surge/wallet/v1/walletv1connect"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/wallet/auth"
	"github.com/surge-dev/surge/internal/wallet/rpc"
	"github.com/surge-dev/surge/internal/wallet/walletstore"
	"github.com/surge-dev/surge/internal/workloads"
)

// walletState is a node's social store as the log snapshots it.
type walletState struct{ walletstore.Store }

func (s walletState) Snapshot() (Pairs, error) { return s.SocialView() }

func (s walletState) Restore(each func(put func(key, value []byte) error) error) error {
	return s.ReplaceSocial(each)
}

// walletNode is a cluster node's wallet on the social log: its store, its
// log and its Service, with clients of it.
type walletNode struct {
	db     *store.Store
	log    *Log
	svc    *rpc.Service
	auth   walletv1connect.AuthServiceClient
	friend walletv1connect.FriendServiceClient
	chat   walletv1connect.ChatServiceClient
}

// startWalletNode starts a node as a cluster node starts: restore from the
// newest snapshot if need be, load, catch up with the log.
func startWalletNode(t *testing.T, ctx context.Context, c kafkalog.Config, every int64, ledger *ledgerengine.Ledger) *walletNode {
	t.Helper()
	db, err := store.Open(t.TempDir(), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ws := walletstore.Store{Store: db}
	l, err := Open(ctx, c, Snapshots{State: walletState{ws}, Every: every}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	applied, err := ws.Applied()
	if err == nil {
		applied, err = l.Restore(ctx, c, applied)
	}
	if err != nil {
		t.Fatal(err)
	}
	svc, err := rpc.New(ctx, rpc.Config{
		Ledger: ledger, Store: db, Currency: "USD", Replicator: l,
		TokenSecret: []byte("0123456789abcdef0123456789abcdef"), TokenTTL: time.Hour,
		BcryptCost: 4, MinAmount: 1, LoginLimit: auth.DefaultLimit,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Run(ctx, c, applied+1, svc.Apply); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	return &walletNode{db: db, log: l, svc: svc,
		auth:   walletv1connect.NewAuthServiceClient(http.DefaultClient, srv.URL),
		friend: walletv1connect.NewFriendServiceClient(http.DefaultClient, srv.URL),
		chat:   walletv1connect.NewChatServiceClient(http.DefaultClient, srv.URL),
	}
}

// A node started on an empty store after many social records loads the
// newest snapshot and applies only the log's records after it, and its
// store then holds what the node that wrote the snapshots holds. Each
// snapshot cuts the log below the one before; a node whose next record
// was cut stops rather than skip it.
func TestNewNodeStartsFromTheNewestSnapshot(t *testing.T) {
	ctx, c := newConfig(t)
	wl := openLedger(t)
	const every = 20
	a := startWalletNode(t, ctx, c, every, wl)
	token := make([]string, 2)
	ids := make([]uint64, 2)
	for i, name := range []string{"ann", "bob"} {
		res, err := a.auth.Register(ctx, connect.NewRequest(&walletv1.RegisterRequest{Username: name, Name: name, Password: "password1"}))
		if err != nil {
			t.Fatal(err)
		}
		token[i], ids[i] = res.Msg.Token, res.Msg.User.Id
	}
	add := connect.NewRequest(&walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: ids[1]}})
	add.Header().Set("Authorization", "Bearer "+token[0])
	accept := connect.NewRequest(&walletv1.AcceptFriendRequest{UserId: ids[0]})
	accept.Header().Set("Authorization", "Bearer "+token[1])
	if _, err := a.friend.AddFriend(ctx, add); err != nil {
		t.Fatal(err)
	}
	if _, err := a.friend.AcceptFriend(ctx, accept); err != nil {
		t.Fatal(err)
	}
	for snapshots := int64(1); snapshots <= 2; snapshots++ {
		a.fillTo(t, ctx, snapshots*every)
		waitFor(t, fmt.Sprintf("snapshot %d", snapshots), func() bool { return a.log.Stats().SnapshotsWritten == snapshots })
	}
	if start, err := a.log.startOf(ctx, a.log.topic); err != nil || start != every {
		t.Fatalf("the social log starts at %d after 2 snapshots (%v), want %d", start, err, every)
	}
	const tail = 7
	for i := range tail - 1 {
		req := connect.NewRequest(&walletv1.SendMessageRequest{ToUserId: ids[1], Text: fmt.Sprintf("note %d", i)})
		req.Header().Set("Authorization", "Bearer "+token[0])
		if _, err := a.chat.SendMessage(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	a.fillTo(t, ctx, 2*every+tail)

	b := startWalletNode(t, ctx, c, every, wl)
	st := b.log.Stats()
	// the snapshot topic's last record (the trailer), then the chunk
	if st.SnapshotRecords != 2 || st.LogRecords != tail {
		t.Errorf("the new node read %d snapshot records and %d log records, want 2 and %d", st.SnapshotRecords, st.LogRecords, tail)
	}
	if err := a.log.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := socialKeys(t, b.db), socialKeys(t, a.db); got != want {
		t.Errorf("the new node's store:\n%s\nthe old node's:\n%s", got, want)
	}
	req := connect.NewRequest(&walletv1.GetMessagesRequest{PeerId: ids[0]})
	req.Header().Set("Authorization", "Bearer "+token[1])
	page, err := b.chat.GetMessages(ctx, req)
	if err != nil || len(page.Msg.Messages) != tail-1 {
		t.Fatalf("bob's messages on the new node: %v %v", page, err)
	}

	lagging, err := Open(ctx, c, Snapshots{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lagging.Close()
	err = lagging.Run(ctx, c, every-1, (&node{}).apply)
	if err == nil || !strings.Contains(err.Error(), "restart the node") {
		t.Fatalf("a node whose next record was cut: %v, want the error that says to restart", err)
	}
}

// fillTo appends failed logins (one record each) until the log holds end
// records.
func (n *walletNode) fillTo(t *testing.T, ctx context.Context, end int64) {
	t.Helper()
	for i := 0; ; i++ {
		at, err := n.log.endOf(ctx, n.log.topic)
		if err != nil {
			t.Fatal(err)
		}
		if at >= end {
			if at > end {
				t.Fatalf("the log holds %d records, past %d", at, end)
			}
			return
		}
		_, err = n.auth.Login(ctx, connect.NewRequest(&walletv1.LoginRequest{Username: fmt.Sprintf("nobody%d-%d", end, i), Password: "wrong-password"}))
		if connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Fatalf("a failed login: %v", err)
		}
	}
}

// socialKeys lists a store's social keys and values but the node's own.
func socialKeys(t *testing.T, db *store.Store) string {
	t.Helper()
	v, err := walletstore.Store{Store: db}.SocialView()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var b bytes.Buffer
	if err := v.Each(func(k, val []byte) error { _, err := fmt.Fprintf(&b, "%q=%x\n", k, val); return err }); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// openLedger opens a single node's ledger, shared by the wallet nodes.
func openLedger(t *testing.T) *ledgerengine.Ledger {
	t.Helper()
	wl, err := workloads.Open(context.Background(), workloads.Config{Currency: "USD", Engine: engine.Config{Dir: t.TempDir(), Shards: 2, NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wl.Ledger.Close(); _ = wl.Engine.Close() })
	return wl.Ledger
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
	}
}
