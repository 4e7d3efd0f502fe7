package wallet

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/transfer"
	"github.com/surge-dev/surge/internal/bench/units"
	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
)

// walletSetupWorkers is how many setup calls run at once: registration is
// one bcrypt hash per user on the server, which wants every core busy.
const walletSetupWorkers = 32

// setupWallet makes cfg.Users users ready: from the users cache of an
// earlier run with the same settings, when the server still knows them
// (registration alone costs the server a bcrypt hash a user), else with
// makeUsers, after which it caches them.
func setupWallet(ctx context.Context, conn *grpc.ClientConn, cfg WalletConfig, log *report.Progress) ([]benchUser, error) {
	path, err := cachePath(cfg)
	if err != nil {
		log.Printf("setup: no users cache: %v", err)
	}
	if path != "" {
		if users, ok := loadCachedUsers(ctx, conn, cfg, path); ok {
			log.Printf("setup: %s users, their friends, funds and history from an earlier run (%s)", units.Thousands(int64(cfg.Users)), path)
			return users, nil
		}
	}
	users, err := makeUsers(ctx, conn, cfg, log)
	if err != nil {
		return nil, err
	}
	if path != "" {
		if err := saveCachedUsers(cfg, path, users); err != nil {
			log.Printf("setup: users not cached for the next run: %v", err)
		}
	}
	return users, nil
}

// makeUsers makes cfg.Users users ready, repeatably: it registers each
// (or logs in, if a previous run did), makes each the friend of the next
// Friends/2 users round a ring (so everyone has Friends friends), funds
// every wallet from @world over the ledger API, and gives each friendship
// one transfer and one message, so that histories and chat lists have
// something to show (report 001 ran with 4,000 history rows). Funding and
// the setup transfers carry fixed ids, so a second run replays them.
func makeUsers(ctx context.Context, conn *grpc.ClientConn, cfg WalletConfig, log *report.Progress) ([]benchUser, error) {
	t0 := time.Now()
	users := make([]benchUser, cfg.Users)
	err := bench.ForEach(ctx, walletSetupWorkers, cfg.Users, func(context.Context) (func(int) error, func()) {
		return func(i int) error {
			u, err := signIn(ctx, conn, cfg, i)
			users[i] = u
			return err
		}, func() {}
	})
	if err != nil {
		return nil, err
	}
	half := cfg.Friends / 2
	for i := range users {
		for k := 1; k <= half; k++ {
			j := (i + k) % cfg.Users
			users[i].friends = append(users[i].friends, j)
			users[j].friends = append(users[j].friends, i)
		}
	}
	log.Printf("setup: %s users signed in in %s", units.Thousands(int64(cfg.Users)), units.K6Duration(time.Since(t0)))
	t1 := time.Now()
	if err := bench.ForEach(ctx, walletSetupWorkers, cfg.Users, func(context.Context) (func(int) error, func()) {
		return func(i int) error { return befriendNext(conn, users, i, half) }, func() {}
	}); err != nil {
		return nil, err
	}
	if err := fundWallets(ctx, cfg, users); err != nil {
		return nil, err
	}
	if err := bench.ForEach(ctx, walletSetupWorkers, cfg.Users, func(context.Context) (func(int) error, func()) {
		return func(i int) error { return greetNext(conn, users, i, half) }, func() {}
	}); err != nil {
		return nil, err
	}
	log.Printf("setup: %s friendships, each with a transfer and a message, and %s wallets funded in %s",
		units.Thousands(int64(cfg.Users*half)), units.Thousands(int64(cfg.Users)), units.K6Duration(time.Since(t1)))
	return users, nil
}

// signIn registers user i, or logs in if the username is taken.
func signIn(ctx context.Context, conn *grpc.ClientConn, cfg WalletConfig, i int) (benchUser, error) {
	username := cfg.UserPrefix + strconv.Itoa(i)
	reg := &walletv1.RegisterResponse{}
	err := conn.Invoke(ctx, walletMethod("Register"), &walletv1.RegisterRequest{Username: username, Name: "Bench user " + strconv.Itoa(i), Password: cfg.Password}, reg)
	user, token := reg.GetUser(), reg.GetToken()
	if status.Code(err) == codes.AlreadyExists {
		login := &walletv1.LoginResponse{}
		err = conn.Invoke(ctx, walletMethod("Login"), &walletv1.LoginRequest{Username: username, Password: cfg.Password}, login)
		user, token = login.GetUser(), login.GetToken()
	}
	if err != nil {
		return benchUser{}, fmt.Errorf("bench: sign in %s: %w", username, err)
	}
	return benchUser{id: user.GetId(), token: token, ctx: metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)}, nil
}

// befriendNext makes user i the friend of the next half users.
func befriendNext(conn *grpc.ClientConn, users []benchUser, i, half int) error {
	for k := 1; k <= half; k++ {
		peer := &users[(i+k)%len(users)]
		err := conn.Invoke(users[i].ctx, walletMethod("AddFriend"),
			&walletv1.AddFriendRequest{User: &walletv1.AddFriendRequest_UserId{UserId: peer.id}}, &walletv1.AddFriendResponse{})
		if err != nil && status.Code(err) != codes.AlreadyExists {
			return fmt.Errorf("bench: befriend: %w", err)
		}
		err = conn.Invoke(peer.ctx, walletMethod("AcceptFriend"), &walletv1.AcceptFriendRequest{UserId: users[i].id}, &walletv1.AcceptFriendResponse{})
		if err != nil && status.Code(err) != codes.FailedPrecondition { // already friends
			return fmt.Errorf("bench: accept friend: %w", err)
		}
	}
	return nil
}

// greetNext sends one transfer and one message from user i to each of the
// next half users; a transfer replayed from an earlier run sends no
// message.
func greetNext(conn *grpc.ClientConn, users []benchUser, i, half int) error {
	for k := 1; k <= half; k++ {
		peer := users[(i+k)%len(users)].id
		res := &walletv1.TransferResponse{}
		req := &walletv1.TransferRequest{RequestId: "setup-" + strconv.FormatUint(peer, 10), ToUserId: peer, Amount: 1, Message: "hello"}
		if err := conn.Invoke(users[i].ctx, walletMethod("Transfer"), req, res); err != nil {
			return fmt.Errorf("bench: setup transfer: %w", err)
		}
		if res.Replayed {
			continue
		}
		if err := conn.Invoke(users[i].ctx, walletMethod("SendMessage"), &walletv1.SendMessageRequest{ToUserId: peer, Text: "hi there"}, &walletv1.SendMessageResponse{}); err != nil {
			return fmt.Errorf("bench: setup message: %w", err)
		}
	}
	return nil
}

// fundWallets moves cfg.Fund from @world into every wallet through the
// ledger's batch route.
func fundWallets(ctx context.Context, cfg WalletConfig, users []benchUser) error {
	c, err := httpc.NewHTTPClient(httpc.HTTPOptions{Target: cfg.Target, APIKey: cfg.APIKey, Client: httpc.StdClient, Conns: transfer.FundWorkers, Timeout: cfg.Timeout})
	if err != nil {
		return err
	}
	defer c.Close()
	chunks := (len(users) + transfer.FundBatch - 1) / transfer.FundBatch
	fund := strconv.FormatInt(cfg.Fund, 10)
	return bench.ForEach(ctx, transfer.FundWorkers, chunks, func(ctx context.Context) (func(int) error, func()) {
		ep := c.Endpoint(ctx, http.MethodPost, "/v1/transfers/batch")
		return func(chunk int) error {
			lo, hi := chunk*transfer.FundBatch, min((chunk+1)*transfer.FundBatch, len(users))
			b := append(ep.Body(), `{"transfers":[`...)
			for i := lo; i < hi; i++ {
				if i > lo {
					b = append(b, ',')
				}
				id := strconv.FormatUint(users[i].id, 10)
				b = fmt.Appendf(b, `{"id":"walletbench-fund-%s-%s","from":"@world","to":"wallet:%s","amount":%s}`, fund, id, id, fund)
			}
			b = append(b, "]}"...)
			status, reply, err := bench.SendRetrying(ctx, ep, b)
			if err != nil || status != http.StatusOK {
				return fmt.Errorf("bench: funding wallets: %v %s", err, httpc.ProblemDetail(reply))
			}
			if failed, reasons, ok := transfer.JudgeBatch(reply, hi-lo); !ok || failed > 0 {
				return fmt.Errorf("bench: funding wallets: %d of %d failed %v", failed, hi-lo, reasons)
			}
			return nil
		}, ep.Close
	})
}
