package wallet

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/surge-dev/surge/internal/bench/load"
	"github.com/surge-dev/surge/internal/bench/measure"
	vmrpb "github.com/surge-dev/surge/internal/gen/vmr"
)

// The faces `surge bench wallet --api` can drive: surge.wallet.v1, or VMR
// chat's vmr.* services, which report 001's ghz runs called.
const (
	APISurge = "surge"
	APIVMR   = "vmr"
)

// vmrCalls maps the calls VMR has to its methods; GetMessages has none
// (VMR read messages over REST).
var vmrCalls = map[string]string{
	"Transfer":          "/vmr.WalletService/Transfer",
	"GetBalance":        "/vmr.WalletService/GetBalance",
	"GetHistory":        "/vmr.WalletService/GetHistoryWithOffset",
	"GetFriendList":     "/vmr.FriendService/GetFriendList",
	"GetChatFriendList": "/vmr.FriendService/GetChatFriendList",
}

// vmrMinAmount is the smallest transfer VMR accepts.
const vmrMinAmount = 1000

func checkAPI(api, call string) error {
	switch api {
	case APISurge:
		return nil
	case APIVMR:
		if _, ok := vmrCalls[call]; !ok {
			return fmt.Errorf("bench: --api vmr has no %s; VMR's calls are Transfer, GetBalance, GetHistory, GetFriendList, GetChatFriendList", call)
		}
		return nil
	}
	return fmt.Errorf("bench: --api must be %s or %s", APISurge, APIVMR)
}

func vmrMessages(call, password string) (req, reply proto.Message) {
	switch call {
	case "Transfer":
		return &vmrpb.TransferRequest{Message: "bench", Password: password}, &vmrpb.TransferResponse{}
	case "GetBalance":
		return &vmrpb.Empty{}, &vmrpb.BalanceResponse{}
	case "GetHistory":
		return &vmrpb.GetHistoryWithOffsetRequest{}, &vmrpb.HistoryResponse{}
	default: // GetFriendList, GetChatFriendList
		return &vmrpb.Empty{}, &vmrpb.FriendListResponse{}
	}
}

// vmrRequestIDs numbers VMR transfers: request ids are int64 and must not
// repeat per sender across runs, so they start from the run's start time
// in milliseconds, shifted clear of the count.
var vmrRequestIDs atomic.Int64

func init() { vmrRequestIDs.Store(time.Now().UnixMilli() << 22) }

// prepareVMR fills a VMR request for user u.
func (v *walletVU) prepareVMR(u *benchUser, vu *load.VU) {
	if r, ok := v.req.(*vmrpb.TransferRequest); ok {
		r.Receiver = int64(v.users[u.friends[vu.Rand.IntN(len(u.friends))]].id)
		r.Amount = uint64(vmrMinAmount + vu.Rand.Int64N(v.amount))
		r.RequestId = vmrRequestIDs.Add(1)
	}
}

// vmrOutcome is a VMR reply's failure, which it carries in its error
// field under status OK.
func vmrOutcome(reply proto.Message) measure.Outcome {
	r, ok := reply.(interface{ GetError() *vmrpb.Error })
	if !ok || r.GetError() == nil {
		return measure.Outcome{}
	}
	e := r.GetError()
	return measure.Outcome{Failure: e.Code.String(), Detail: e.Message}
}

// withVMRToken adds VMR's x-jwt-token to md, from its bearer token.
func withVMRToken(md metadata.MD) metadata.MD {
	if v := md.Get("authorization"); len(v) > 0 {
		md = md.Copy()
		md.Set("x-jwt-token", strings.TrimPrefix(v[0], "Bearer "))
	}
	return md
}
