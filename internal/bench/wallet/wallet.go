package wallet

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/surge-dev/surge/internal/bench"
	"github.com/surge-dev/surge/internal/bench/httpc"
	"github.com/surge-dev/surge/internal/bench/load"
	"github.com/surge-dev/surge/internal/bench/measure"
	"github.com/surge-dev/surge/internal/bench/report"
	"github.com/surge-dev/surge/internal/bench/units"
	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/wallet/rpc/vtcodec"
)

// Targets for the wallet scenario, at c=20 (docs/BENCHMARKS.md, "Targets").
const (
	TargetWalletTransferRPS = 10000
	TargetWalletReadRPS     = 20000
)

// WalletCalls are the calls `surge bench wallet --call` can drive: report
// 001's five, plus GetMessages.
var WalletCalls = []string{"Transfer", "GetBalance", "GetHistory", "GetFriendList", "GetChatFriendList", "GetMessages"}

// WalletConfig configures the wallet scenario, report 001's ghz runs:
// -c concurrent callers making -n calls (or calling for --duration) of
// one RPC with a random user.
type WalletConfig struct {
	// Common's VUs is ghz's -c, Iterations its -n, Duration its -z.
	bench.Common
	// Call is the RPC, one of WalletCalls.
	Call string
	// Connections is the number of HTTP/2 connections the callers share
	// (ghz's --connections).
	Connections int
	// Users is the number of users; Friends how many friends each has.
	Users   int
	Friends int
	// Fund is each wallet's balance from @world at setup.
	Fund int64
	// AmountMax bounds each Transfer's amount, drawn from 1..AmountMax.
	AmountMax int64
	// UserPrefix starts every username.
	UserPrefix string
	// Password of every bench user.
	Password string
	// Currency of the funding transfers (the server's, --currency).
	Currency string
	// UsersCache is where a run keeps its users and their tokens for the
	// next run with the same settings against the same server, which then
	// skips the setup: a file, UsersCacheAuto or UsersCacheOff.
	UsersCache string
	// API is the face called: APISurge (surge.wallet.v1) or APIVMR
	// (VMR chat's vmr.*, on the same users).
	API string
}

// DefaultWalletConfig returns report 001's settings: 1,000 users, 500
// calls, 20 at a time.
func DefaultWalletConfig() WalletConfig {
	c := bench.DefaultCommon()
	c.VUs, c.Iterations, c.Duration = 20, 500, 0
	c.Timeout = 20 * time.Second
	return WalletConfig{
		Common: c, Call: "Transfer", Connections: 1, Users: 1000, Friends: 8,
		Fund: 1_000_000_000, AmountMax: 1000, UserPrefix: "wb", Password: "bench-password-1", UsersCache: UsersCacheAuto,
		API: APISurge,
	}
}

func (c WalletConfig) validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	switch {
	case !validWalletCall(c.Call):
		return fmt.Errorf("bench: --call must be one of %v", WalletCalls)
	case checkAPI(c.API, c.Call) != nil:
		return checkAPI(c.API, c.Call)
	case c.Connections < 1:
		return errors.New("bench: --connections must be at least 1")
	case c.Users < 2:
		return errors.New("bench: --users must be at least 2")
	case c.Friends < 2 || c.Friends%2 != 0 || c.Friends >= c.Users:
		return errors.New("bench: --friends must be even, at least 2 and below --users")
	case c.AmountMax < 1 || c.Fund < c.AmountMax:
		return errors.New("bench: --amount-max must be at least 1 and --fund at least --amount-max")
	}
	return nil
}

func validWalletCall(call string) bool {
	for _, c := range WalletCalls {
		if c == call {
			return true
		}
	}
	return false
}

// RunWallet sets up the users (registered, befriended, funded, with some
// history and chat) and runs cfg.Call in a closed loop.
func RunWallet(ctx context.Context, cfg WalletConfig) (*report.Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Common = cfg.Common.WithDefaults()
	conns, err := dialWallet(cfg.Target, cfg.Connections)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	progress := report.NewProgress(cfg.Log, "")
	users, err := setupWallet(ctx, conns[0], cfg, progress)
	if err != nil {
		return nil, err
	}
	runID := bench.NewRunID()
	progress.Printf("wallet: %s, -c %d, %s, %d connection(s), run id %s", cfg.Call, cfg.VUs, cfg.Common.DescribeLimit(), cfg.Connections, runID)
	run, err := cfg.Closed(progress.Tick).Run(ctx, func(vctx context.Context, vu *load.VU) (load.Iteration, error) {
		return newWalletVU(vctx, conns[vu.ID%len(conns)], cfg, users, runID, vu.ID).iterate, nil
	})
	progress.Done()
	if err != nil {
		return nil, err
	}
	res := report.NewResult("wallet", cfg.Params(walletParams(cfg, runID)), run, nil)
	res.Spectrum = run.Stats.FullSpectrum()
	res.Verdict = walletVerdict(res, cfg.Call)
	return res, nil
}

func walletParams(c WalletConfig, runID string) map[string]string {
	return map[string]string{
		"call":        c.Call,
		"connections": strconv.Itoa(c.Connections),
		"users":       strconv.Itoa(c.Users),
		"friends":     strconv.Itoa(c.Friends),
		"amount_max":  strconv.FormatInt(c.AmountMax, 10),
		"api":         c.API,
		"run_id":      runID,
	}
}

// walletVerdict judges a run against its targets, counting only OK calls.
func walletVerdict(r *report.Result, call string) *report.Verdict {
	target := TargetWalletReadRPS
	if call == "Transfer" {
		target = TargetWalletTransferRPS
	}
	rps := measure.PerSecond(r.Totals.Requests-r.Totals.Failed, float64(r.Totals.Elapsed))
	return &report.Verdict{
		Target: fmt.Sprintf("%s ≥ %s rps at c=20", call, units.Thousands(int64(target))),
		Pass:   rps >= float64(target),
		Detail: fmt.Sprintf("%s rps at c=%d", units.Rate(rps), r.Params.VUs),
	}
}

// dialWallet opens n gRPC connections (HTTP/2 without TLS), at least one
// per target, spread over the targets (comma-separated base URLs).
func dialWallet(targets string, n int) ([]*grpc.ClientConn, error) {
	var hosts []string
	for _, target := range httpc.SplitTargets(targets) {
		u, err := url.Parse(target)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("bench: --target %q is not a URL like http://127.0.0.1:8080", target)
		}
		if u.Scheme != "http" {
			return nil, fmt.Errorf("bench: the wallet scenario speaks gRPC without TLS; --target must be http://")
		}
		hosts = append(hosts, u.Host)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("bench: no --target")
	}
	// At least a connection per target, the callers spread over them.
	conns := make([]*grpc.ClientConn, 0, max(n, len(hosts)))
	for i := range cap(conns) {
		host := hosts[i%len(hosts)]
		cc, err := grpc.NewClient("passthrough:///"+host, grpc.WithTransportCredentials(insecure.NewCredentials()),
			// Decoding replies by reflection was a quarter of the load generator's CPU on GetHistory.
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(vtcodec.Codec{TrustInput: true})))
		if err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("bench: connect to %s: %w", host, err)
		}
		conns = append(conns, cc)
	}
	return conns, nil
}

func closeAll(conns []*grpc.ClientConn) {
	for _, c := range conns {
		_ = c.Close()
	}
}

// walletMethod is the full gRPC method name of a call.
func walletMethod(call string) string {
	service := "WalletService"
	switch call {
	case "GetFriendList", "GetChatFriendList", "AddFriend", "AcceptFriend":
		service = "FriendService"
	case "GetMessages", "SendMessage":
		service = "ChatService"
	case "Register", "Login":
		service = "AuthService"
	}
	return "/surge.wallet.v1." + service + "/" + call
}

// benchUser is a set-up user: their id, and a context carrying their token.
type benchUser struct {
	id      uint64
	token   string
	ctx     context.Context
	friends []int // indexes into the users slice
}

// walletVU is one concurrent caller. It reuses its request and reply
// messages: on a machine shared with the server, every allocation of the
// load generator is CPU the server does not get.
type walletVU struct {
	conn    *grpc.ClientConn
	method  string
	call    string
	users   []benchUser
	timeout time.Duration
	amount  int64
	idPre   string
	seq     bench.Decimal
	req     proto.Message
	reply   proto.Message
	vmr     bool // calling VMR's face (--api vmr)
}

func newWalletVU(ctx context.Context, conn *grpc.ClientConn, cfg WalletConfig, users []benchUser, runID string, vu int) *walletVU {
	v := &walletVU{
		conn: conn, method: walletMethod(cfg.Call), call: cfg.Call, users: withParent(ctx, users),
		timeout: cfg.Timeout, amount: cfg.AmountMax, idPre: runID + "-" + strconv.Itoa(vu) + "-", seq: bench.Decimal("0"),
	}
	v.req, v.reply = walletMessages(cfg.Call)
	if v.vmr = cfg.API == APIVMR; v.vmr {
		v.method = vmrCalls[cfg.Call]
		v.req, v.reply = vmrMessages(cfg.Call, cfg.Password)
		for i := range v.users {
			md, _ := metadata.FromOutgoingContext(v.users[i].ctx)
			v.users[i].ctx = metadata.NewOutgoingContext(v.users[i].ctx, withVMRToken(md))
		}
	}
	return v
}

// withParent rebinds each user's context to the VU's, so that an
// interrupted run cancels the calls in flight.
func withParent(ctx context.Context, users []benchUser) []benchUser {
	out := make([]benchUser, len(users))
	for i, u := range users {
		md, _ := metadata.FromOutgoingContext(u.ctx)
		out[i] = benchUser{id: u.id, ctx: metadata.NewOutgoingContext(ctx, md), friends: u.friends}
	}
	return out
}

func walletMessages(call string) (req, reply proto.Message) {
	switch call {
	case "Transfer":
		return &walletv1.TransferRequest{Message: "bench"}, &walletv1.TransferResponse{}
	case "GetBalance":
		return &walletv1.GetBalanceRequest{}, &walletv1.GetBalanceResponse{}
	case "GetHistory":
		return &walletv1.GetHistoryRequest{PageSize: 20}, &walletv1.GetHistoryResponse{}
	case "GetFriendList":
		return &walletv1.GetFriendListRequest{}, &walletv1.GetFriendListResponse{}
	case "GetChatFriendList":
		return &walletv1.GetChatFriendListRequest{}, &walletv1.GetChatFriendListResponse{}
	default: // GetMessages
		return &walletv1.GetMessagesRequest{PageSize: 20}, &walletv1.GetMessagesResponse{}
	}
}

// iterate makes one call as a random user; Transfer pays a random friend
// of theirs, GetMessages reads the conversation with one.
func (v *walletVU) iterate(ctx context.Context, vu *load.VU) {
	u := &v.users[vu.Rand.IntN(len(v.users))]
	switch r := v.req.(type) {
	case *walletv1.TransferRequest:
		r.ToUserId = v.users[u.friends[vu.Rand.IntN(len(u.friends))]].id
		r.Amount = 1 + vu.Rand.Int64N(v.amount)
		r.RequestId = v.idPre + string(v.seq)
		v.seq.Inc()
	case *walletv1.GetMessagesRequest:
		r.PeerId = v.users[u.friends[vu.Rand.IntN(len(u.friends))]].id
	default:
		v.prepareVMR(u, vu)
	}
	cctx, cancel := u.ctx, context.CancelFunc(func() {})
	if v.timeout > 0 {
		cctx, cancel = context.WithTimeout(u.ctx, v.timeout)
	}
	start := time.Now()
	err := v.conn.Invoke(cctx, v.method, v.req, v.reply)
	cancel()
	if err != nil && ctx.Err() != nil {
		return // interrupted: not the server's failure
	}
	var o measure.Outcome
	if err != nil {
		st := status.Convert(err)
		o = measure.Outcome{Failure: st.Code().String(), Detail: st.Message()}
	} else if v.vmr {
		o = vmrOutcome(v.reply)
	}
	vu.Record(start, o)
}
