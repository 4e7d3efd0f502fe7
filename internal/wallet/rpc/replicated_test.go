package rpc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/surge-dev/surge/internal/engine"
	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/gen/surge/wallet/v1/walletv1connect"
	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/ledger/ledgerengine"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/wallet/auth"
	"github.com/surge-dev/surge/internal/wallet/social"
	"github.com/surge-dev/surge/internal/workloads"
)

// These tests run the cluster's wallet on one in-memory log shared by
// three Services (the nodes), each with its own store, on one real ledger.
// A node applies the log only when it proposes or syncs, so a node that
// did not sync has not seen the others' changes: what the tests check
// holds only because the calls sync and decide at apply time.

// memLog is a social log in memory.
type memLog struct {
	mu      sync.Mutex
	records [][]byte
}

// memReplica is one node's handle on a memLog.
type memReplica struct {
	log  *memLog
	svc  *Service
	next int // guarded by log.mu
}

// applyTo applies the log up to its end; the outcome of record at.
func (r *memReplica) applyTo(at int) (any, error) {
	var out any
	for ; r.next < len(r.log.records); r.next++ {
		o, err := r.svc.Apply(int64(r.next), r.log.records[r.next])
		if err != nil {
			return nil, err
		}
		if r.next == at {
			out = o
		}
	}
	return out, nil
}

func (r *memReplica) Propose(_ context.Context, op []byte) (any, error) {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	r.log.records = append(r.log.records, op)
	return r.applyTo(len(r.log.records) - 1)
}

func (r *memReplica) Sync(context.Context) error {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	_, err := r.applyTo(-1)
	return err
}

// memNode is a node: its Service and clients of it over Connect.
type memNode struct {
	svc    *Service
	repl   *memReplica
	auth   walletv1connect.AuthServiceClient
	wallet walletv1connect.WalletServiceClient
	friend walletv1connect.FriendServiceClient
	chat   walletv1connect.ChatServiceClient
}

func startMemCluster(t *testing.T, n int) ([]*memNode, *ledgerengine.Ledger) {
	t.Helper()
	ctx := context.Background()
	wl, err := workloads.Open(ctx, workloads.Config{Currency: "USD", Engine: engine.Config{Dir: t.TempDir(), Shards: 2, NoSync: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wl.Ledger.Close(); _ = wl.Engine.Close() })
	log := &memLog{}
	nodes := make([]*memNode, n)
	for i := range nodes {
		st, err := store.Open(t.TempDir(), store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		repl := &memReplica{log: log}
		svc, err := New(ctx, Config{
			Ledger: wl.Ledger, Store: st, Currency: "USD", Replicator: repl,
			TokenSecret: []byte("0123456789abcdef0123456789abcdef"), TokenTTL: time.Hour,
			BcryptCost: 4, MinAmount: 1, LoginLimit: auth.DefaultLimit,
		})
		if err != nil {
			t.Fatal(err)
		}
		repl.svc = svc
		srv := httptest.NewServer(svc.Handler())
		t.Cleanup(srv.Close)
		nodes[i] = &memNode{svc: svc, repl: repl,
			auth:   walletv1connect.NewAuthServiceClient(http.DefaultClient, srv.URL),
			wallet: walletv1connect.NewWalletServiceClient(http.DefaultClient, srv.URL),
			friend: walletv1connect.NewFriendServiceClient(http.DefaultClient, srv.URL),
			chat:   walletv1connect.NewChatServiceClient(http.DefaultClient, srv.URL),
		}
	}
	return nodes, wl.Ledger
}

type memUser struct {
	id    uint64
	token string
}

func bearer[T any](u memUser, msg *T) *connect.Request[T] {
	req := connect.NewRequest(msg)
	req.Header().Set("Authorization", "Bearer "+u.token)
	return req
}

func register(t *testing.T, n *memNode, name string) memUser {
	t.Helper()
	res, err := n.auth.Register(context.Background(), connect.NewRequest(&walletv1.RegisterRequest{Username: name, Name: name, Password: "password1"}))
	if err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	return memUser{id: res.Msg.User.Id, token: res.Msg.Token}
}

func codeOf(err error) connect.Code {
	if err == nil {
		return 0
	}
	return connect.CodeOf(err)
}

// A change acknowledged on one node is seen by a read on any other, and
// the outcome of a change is decided in log order: the same username
// registered on two nodes goes to the first, messages are numbered alike
// everywhere.
func TestReplicasReadAfterWriteAndDecideInLogOrder(t *testing.T) {
	nodes, _ := startMemCluster(t, 3)
	ctx := context.Background()
	ann := register(t, nodes[0], "ann")
	if _, err := nodes[1].auth.Login(ctx, connect.NewRequest(&walletv1.LoginRequest{Username: "ann", Password: "password1"})); err != nil {
		t.Fatalf("ann logs in on node 2 right after registering on node 1: %v", err)
	}
	_, err := nodes[2].auth.Register(ctx, connect.NewRequest(&walletv1.RegisterRequest{Username: "ann", Name: "other", Password: "password1"}))
	if codeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("ann again on node 3: %v, want already_exists", err)
	}
	bob := register(t, nodes[2], "bob")
	if bob.id != ann.id+1 {
		t.Errorf("bob's id %d after ann's %d", bob.id, ann.id)
	}
	if _, err := nodes[0].friend.AddFriend(ctx, bearer(ann, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_Username{Username: "bob"}})); err != nil {
		t.Fatalf("ann adds bob (registered on node 3) on node 1: %v", err)
	}
	if _, err := nodes[1].friend.AcceptFriend(ctx, bearer(bob, &walletv1.AcceptFriendRequest{UserId: ann.id})); err != nil {
		t.Fatalf("bob accepts on node 2: %v", err)
	}
	for i, from := range []memUser{ann, bob, ann, bob} {
		to := map[uint64]memUser{ann.id: bob, bob.id: ann}[from.id]
		res, err := nodes[i%3].chat.SendMessage(ctx, bearer(from, &walletv1.SendMessageRequest{ToUserId: to.id, Text: "hi"}))
		if err != nil || res.Msg.Message.Id != uint64(i+1) {
			t.Fatalf("message %d on node %d: %v %v", i+1, i%3+1, res, err)
		}
	}
	for i, n := range nodes {
		page, err := n.chat.GetMessages(ctx, bearer(ann, &walletv1.GetMessagesRequest{PeerId: bob.id}))
		if err != nil || len(page.Msg.Messages) != 4 || page.Msg.Messages[0].Id != 4 {
			t.Fatalf("node %d: ann's conversation %v %v", i+1, page, err)
		}
		list, err := n.friend.GetChatFriendList(ctx, bearer(bob, &walletv1.GetChatFriendListRequest{}))
		if err != nil || len(list.Msg.Friends) != 1 || list.Msg.Friends[0].UnreadCount != 2 {
			t.Fatalf("node %d: bob's chat list %v %v", i+1, list, err)
		}
	}
	if _, err := nodes[2].chat.MarkRead(ctx, bearer(bob, &walletv1.MarkReadRequest{PeerId: ann.id})); err != nil {
		t.Fatal(err)
	}
	list, err := nodes[0].friend.GetChatFriendList(ctx, bearer(bob, &walletv1.GetChatFriendListRequest{}))
	if err != nil || list.Msg.Friends[0].UnreadCount != 0 {
		t.Fatalf("bob's unread on node 1 after reading on node 3: %v %v", list, err)
	}
}

// A node's streams get the events of changes made on other nodes, once
// the node has applied them.
func TestReplicaStreamsGetOtherNodesEvents(t *testing.T) {
	nodes, _ := startMemCluster(t, 2)
	ann, bob := register(t, nodes[0], "ann"), register(t, nodes[0], "bob")
	events := make(chan *walletv1.Event, 8)
	opened, done := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-done }() // its close appends before the stores close
	go func() {
		defer close(done)
		_ = nodes[1].svc.Local().Subscribe(ctx, bob.id, func() error { close(opened); return nil },
			func(e *walletv1.Event) error { events <- e; return nil })
	}()
	<-opened
	if _, err := nodes[0].friend.AddFriend(ctx, bearer(ann, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: bob.id}})); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].repl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if e := <-events; e.GetFriend().GetUser().GetId() != ann.id || e.GetFriend().GetStatus() != walletv1.Friend_NOT_ANSWER {
		t.Fatalf("bob's stream on node 2: %v", e)
	}
}

// A transfer's TRANSFER message is written once: its retry on another
// node is a replay, and settling its intent (on any node, more than once)
// writes nothing more; an intent of a transfer the ledger does not have
// is dropped on every node.
func TestReplicaTransferMessageOnce(t *testing.T) {
	nodes, l := startMemCluster(t, 3)
	ctx := context.Background()
	ann, bob := register(t, nodes[0], "ann"), register(t, nodes[1], "bob")
	if _, _, err := l.Transfer(ctx, ledger.TransferRequest{ID: "fund", From: ledger.WorldID, To: walletID(1), Amount: 1000}); err != nil {
		t.Fatal(err)
	}
	req := &walletv1.TransferRequest{RequestId: "r1", ToUserId: bob.id, Amount: 100}
	if res, err := nodes[0].wallet.Transfer(ctx, bearer(ann, req)); err != nil || res.Msg.Replayed {
		t.Fatalf("transfer on node 1: %v %v", res, err)
	}
	if res, err := nodes[1].wallet.Transfer(ctx, bearer(ann, req)); err != nil || !res.Msg.Replayed {
		t.Fatalf("its retry on node 2: %v %v", res, err)
	}
	// A front node that died after the ledger made the transfer leaves
	// only the intent; another transfer's intent has no transfer.
	if _, _, err := l.Transfer(ctx, ledger.TransferRequest{ID: transferID(1, "r2"), From: walletID(1), To: walletID(2), Amount: 7}); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	for _, id := range []string{transferID(1, "r2"), transferID(1, "lost")} {
		if _, err := nodes[2].svc.propose(ctx, &intentOp{At: past, Transfer: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []*memNode{nodes[1], nodes[0], nodes[1]} {
		if err := n.svc.ResolveIntents(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range nodes {
		page, err := n.chat.GetMessages(ctx, bearer(bob, &walletv1.GetMessagesRequest{PeerId: ann.id}))
		if err != nil || len(page.Msg.Messages) != 2 || page.Msg.Messages[0].Amount != 7 || page.Msg.Messages[1].Amount != 100 {
			t.Fatalf("node %d: bob's conversation %v %v, want the messages of 100 and 7 once each", i+1, page, err)
		}
		left, err := n.svc.store.TransferIntentsBefore(time.Now())
		if err != nil || len(left) != 0 {
			t.Errorf("node %d: intents left %v %v", i+1, left, err)
		}
	}
}

// friendOnline is whether friend shows online in user's friend list read
// on node n.
func friendOnline(t *testing.T, n *memNode, user memUser, friend uint64) bool {
	t.Helper()
	list, err := n.friend.GetFriendList(context.Background(), bearer(user, &walletv1.GetFriendListRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range list.Msg.Friends {
		if f.User.Id == friend {
			return f.User.Online
		}
	}
	t.Fatalf("user %d not in user %d's friend list", friend, user.id)
	return false
}

// subscribeOn opens a stream of user on n and returns once it is open (or
// failed, which fails the test); its cancel returns once the stream has
// closed.
func subscribeOn(t *testing.T, n *memNode, user memUser) (cancel func()) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	opened, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_ = n.svc.Local().Subscribe(ctx, user.id, func() error { close(opened); return nil },
			func(*walletv1.Event) error { return nil })
	}()
	select {
	case <-opened:
	case <-done:
		t.Error("the stream ended before it opened") // callers may run on other goroutines
	}
	cancel = func() { stop(); <-done }
	t.Cleanup(cancel)
	return cancel
}

// A user is online on every node while any node holds a stream of theirs,
// and offline once the last one closes; the users of a node that stops
// renewing its entries go offline once the log's clock is presenceTTL
// past its last record, on every node alike.
func TestReplicaPresenceIsClusterWide(t *testing.T) {
	nodes, _ := startMemCluster(t, 3)
	ctx := context.Background()
	base := time.Now()
	for _, n := range nodes {
		n.svc.presence.now = func() time.Time { return base }
	}
	ann, bob := register(t, nodes[0], "ann"), register(t, nodes[1], "bob")
	if _, err := nodes[0].friend.AddFriend(ctx, bearer(ann, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: bob.id}})); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].friend.AcceptFriend(ctx, bearer(bob, &walletv1.AcceptFriendRequest{UserId: ann.id})); err != nil {
		t.Fatal(err)
	}
	closeFirst := subscribeOn(t, nodes[0], ann)
	closeSecond := subscribeOn(t, nodes[0], ann)
	for i, n := range nodes {
		if !friendOnline(t, n, bob, ann.id) {
			t.Fatalf("ann's streams are open on node 1; bob's friend list on node %d shows her offline", i+1)
		}
	}
	closeFirst()
	if !friendOnline(t, nodes[1], bob, ann.id) {
		t.Fatal("ann still has a stream on node 1; node 2 shows her offline")
	}
	closeSecond()
	for i, n := range nodes {
		if friendOnline(t, n, bob, ann.id) {
			t.Fatalf("ann's last stream closed; node %d shows her online", i+1)
		}
	}

	// Node 1 holds a stream of ann's, then stops appending (it died):
	// node 2's beats move the log's clock on.
	subscribeOn(t, nodes[0], ann)
	for _, beatAt := range []time.Duration{presenceTTL, presenceTTL + time.Second} {
		nodes[1].svc.presence.now = func() time.Time { return base.Add(beatAt) }
		if err := nodes[1].svc.beat(ctx); err != nil {
			t.Fatal(err)
		}
		want := beatAt <= presenceTTL
		for i, n := range nodes[1:] {
			if got := friendOnline(t, n, bob, ann.id); got != want {
				t.Fatalf("log clock %v after node 1's last record: node %d shows ann online=%v, want %v", beatAt, i+2, got, want)
			}
		}
	}
}

// Every node tells its presence watcher (VMR's ONLINE and OFFLINE) when a
// user comes online or goes offline on any node.
func TestReplicaPresenceWatchOnEveryNode(t *testing.T) {
	nodes, _ := startMemCluster(t, 2)
	type flip struct {
		user   uint64
		online bool
	}
	flips := make(chan flip, 8)
	next := func() flip { // the watcher runs within the apply Sync waits for
		select {
		case f := <-flips:
			return f
		default:
			return flip{}
		}
	}
	if !nodes[1].svc.Local().WatchPresence(func(u uint64, online, here bool) {
		if !here {
			flips <- flip{u, online}
		}
	}) {
		t.Fatal("WatchPresence reports a single node")
	}
	ann := register(t, nodes[0], "ann")
	closeStream := subscribeOn(t, nodes[0], ann)
	if err := nodes[1].repl.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f := next(); f != (flip{ann.id, true}) {
		t.Fatalf("node 2's watcher: %v, want ann online", f)
	}
	closeStream()
	if err := nodes[1].repl.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f := next(); f != (flip{ann.id, false}) {
		t.Fatalf("node 2's watcher: %v, want ann offline", f)
	}
}

// Streams of several users opening and closing at once on one node leave
// each user online exactly while one of their streams is open.
func TestReplicaPresenceUnderConcurrentStreams(t *testing.T) {
	nodes, _ := startMemCluster(t, 2)
	ann, bob := register(t, nodes[0], "ann"), register(t, nodes[0], "bob")
	if _, err := nodes[0].friend.AddFriend(context.Background(), bearer(ann, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: bob.id}})); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].friend.AcceptFriend(context.Background(), bearer(bob, &walletv1.AcceptFriendRequest{UserId: ann.id})); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var closers []func()
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := subscribeOn(t, nodes[0], []memUser{ann, bob}[i%2])
			if i%4 < 2 {
				c()
				return
			}
			mu.Lock()
			closers = append(closers, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if !friendOnline(t, nodes[1], bob, ann.id) || !friendOnline(t, nodes[1], ann, bob.id) {
		t.Fatal("ann and bob hold streams on node 1; node 2 shows one offline")
	}
	for _, c := range closers {
		wg.Add(1)
		go func() { defer wg.Done(); c() }()
	}
	wg.Wait()
	if friendOnline(t, nodes[1], bob, ann.id) || friendOnline(t, nodes[1], ann, bob.id) {
		t.Fatal("every stream closed; node 2 shows ann or bob online")
	}
}

// A node's start record drops its former incarnation's entries at once,
// and every other node owes (and appends) a snapshot of its own users.
func TestReplicaPresenceStartDropsFormerIncarnation(t *testing.T) {
	nodes, _ := startMemCluster(t, 2)
	ctx := context.Background()
	ann, bob := register(t, nodes[0], "ann"), register(t, nodes[1], "bob")
	if _, err := nodes[0].friend.AddFriend(ctx, bearer(ann, &walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: bob.id}})); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[1].friend.AcceptFriend(ctx, bearer(bob, &walletv1.AcceptFriendRequest{UserId: ann.id})); err != nil {
		t.Fatal(err)
	}
	subscribeOn(t, nodes[1], ann)
	former := &userPresenceOp{presenceHead: presenceHead{At: time.Now().UTC(), Node: nodes[0].svc.presence.node, Inc: "former"}, User: social.UserID(bob.id), online: true}
	if _, err := nodes[0].svc.propose(ctx, former); err != nil {
		t.Fatal(err)
	}
	if !friendOnline(t, nodes[1], ann, bob.id) {
		t.Fatal("node 1's former incarnation holds bob; node 2 shows him offline")
	}
	if err := nodes[0].svc.StartPresence(ctx); err != nil {
		t.Fatal(err)
	}
	if friendOnline(t, nodes[1], ann, bob.id) {
		t.Fatal("node 1 started again; node 2 still shows its former incarnation's bob online")
	}
	select {
	case <-nodes[1].svc.PresenceOwed():
	default:
		t.Fatal("node 1 started; node 2 owes no snapshot")
	}
	if err := nodes[1].svc.BeatPresence(ctx); err != nil {
		t.Fatal(err)
	}
	if !friendOnline(t, nodes[0], bob, ann.id) {
		t.Fatal("node 2's snapshot after node 1's start dropped ann, whose stream it holds")
	}
}

// Failed logins count on every node: a flood at one username spread over
// the nodes is refused once the single node's burst is spent, not N
// bursts. The allowance grows by one attempt per 1/Rate of the flood's
// length.
func TestReplicaLoginLimitIsClusterWide(t *testing.T) {
	nodes, _ := startMemCluster(t, 3)
	register(t, nodes[0], "ann")
	ctx := context.Background()
	const attempts = 30
	start := time.Now()
	admitted := 0
	for i := range attempts {
		_, err := nodes[i%3].auth.Login(ctx, connect.NewRequest(&walletv1.LoginRequest{Username: "ann", Password: "wrong-password"}))
		switch codeOf(err) {
		case connect.CodeUnauthenticated:
			admitted++
		case connect.CodeResourceExhausted:
		default:
			t.Fatalf("attempt %d on node %d: %v", i+1, i%3+1, err)
		}
	}
	allowed := auth.DefaultLimit.Burst + int(time.Since(start).Seconds()*float64(auth.DefaultLimit.Rate))
	if admitted < auth.DefaultLimit.Burst || admitted > allowed {
		t.Fatalf("%d of %d failed attempts over 3 nodes ran; want %d to %d", admitted, attempts, auth.DefaultLimit.Burst, allowed)
	}
}
