package vmr

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/surge-dev/surge/internal/browser"
	"github.com/surge-dev/surge/internal/gen/vmr/vmrpbconnect"
	"github.com/surge-dev/surge/internal/wallet/rpc"
)

// tokenHeader carries the caller's token in VMR's gRPC calls.
const tokenHeader = "x-jwt-token"

// maxMessageBytes bounds a request message, as surge.wallet.v1's do.
const maxMessageBytes = 64 << 10

var errNoToken = connect.NewError(connect.CodeUnauthenticated, errors.New("missing or invalid x-jwt-token"))

// caller is who makes a call: the token's user and the client's address.
type caller struct {
	user uint64
	peer string
}

// method is one VMR RPC bound to connect-go and to grpc-go. A method's
// failures are in its reply's error field; only a call without a valid
// token fails as a call (UNAUTHENTICATED), as VMR's interceptor did.
type method struct {
	procedure string
	connect   func(opts ...connect.HandlerOption) http.Handler
	desc      grpc.MethodDesc
}

func unary[Req, Res any](f *Face, procedure string, fn func(context.Context, caller, *Req) (*Res, error)) method {
	run := func(ctx context.Context, token, addr string, req *Req) (*Res, error) {
		if err := f.local.Sync(ctx); err != nil {
			return nil, err
		}
		user, ok := f.authenticate(token)
		if !ok {
			return nil, errNoToken
		}
		return fn(ctx, caller{user: user, peer: addr}, req)
	}
	onConnect := func(ctx context.Context, req *connect.Request[Req]) (*connect.Response[Res], error) {
		res, err := run(ctx, req.Header().Get(tokenHeader), req.Peer().Addr, req.Msg)
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(res), nil
	}
	onGRPC := func(ctx context.Context, req any) (any, error) {
		token := ""
		if v := metadata.ValueFromIncomingContext(ctx, tokenHeader); len(v) > 0 {
			token = v[0]
		}
		addr := ""
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			addr = p.Addr.String()
		}
		res, err := run(ctx, token, addr, req.(*Req))
		if err != nil {
			return nil, grpcError(err)
		}
		return res, nil
	}
	return method{
		procedure: procedure,
		connect: func(opts ...connect.HandlerOption) http.Handler {
			return connect.NewUnaryHandler(procedure, onConnect, opts...)
		},
		desc: rpc.UnaryDesc[Req](procedure, onGRPC),
	}
}

// methods are the RPCs of both services.
func (f *Face) methods() []method {
	w, fr := walletService{f}, friendService{f}
	return []method{
		unary(f, vmrpbconnect.WalletServiceGetBalanceProcedure, w.GetBalance),
		unary(f, vmrpbconnect.WalletServiceTransferProcedure, w.Transfer),
		unary(f, vmrpbconnect.WalletServiceGetHistoryWithOffsetProcedure, w.GetHistoryWithOffset),
		unary(f, vmrpbconnect.WalletServiceRemindTransferProcedure, w.RemindTransfer),
		unary(f, vmrpbconnect.WalletServiceGetTransferReminderProcedure, w.GetTransferReminder),
		unary(f, vmrpbconnect.FriendServiceGetFriendListProcedure, fr.GetFriendList),
		unary(f, vmrpbconnect.FriendServiceGetChatFriendListProcedure, fr.GetChatFriendList),
		unary(f, vmrpbconnect.FriendServiceQueryUserProcedure, fr.QueryUser),
		unary(f, vmrpbconnect.FriendServiceClearUnreadMessageProcedure, fr.ClearUnreadMessage),
		unary(f, vmrpbconnect.FriendServiceSetFriendStatusProcedure, fr.SetFriendStatus),
		unary(f, vmrpbconnect.FriendServiceGetUserInfoProcedure, fr.GetUserInfo),
	}
}

// rpcHandler serves the RPCs over gRPC, gRPC-Web (binary and text) and
// Connect.
func (f *Face) rpcHandler() http.Handler {
	mux := http.NewServeMux()
	for _, m := range f.methods() {
		mux.Handle(m.procedure, m.connect(connect.WithReadMaxBytes(maxMessageBytes)))
	}
	return browser.GRPCWebText(mux)
}

// RegisterGRPC adds the two services to srv, for the connections whose
// first request is gRPC; call it before srv serves.
func (f *Face) RegisterGRPC(srv *grpc.Server) {
	descs := map[string]*grpc.ServiceDesc{
		vmrpbconnect.WalletServiceName: {ServiceName: vmrpbconnect.WalletServiceName, HandlerType: (*any)(nil)},
		vmrpbconnect.FriendServiceName: {ServiceName: vmrpbconnect.FriendServiceName, HandlerType: (*any)(nil)},
	}
	for _, m := range f.methods() {
		d := descs[m.procedure[1:strings.LastIndexByte(m.procedure, '/')]]
		d.Methods = append(d.Methods, m.desc)
	}
	for _, d := range descs {
		srv.RegisterService(d, nil)
	}
}

// grpcError converts a connect-go error to grpc-go's.
func grpcError(err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return status.Error(codes.Code(ce.Code()), ce.Message())
	}
	return err
}
