package vmr

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	vmrpb "github.com/surge-dev/surge/internal/gen/vmr"
)

// searchLimit is how many users QueryUser returns, VMR's.
const searchLimit = 10

// friendService implements vmr.FriendService.
type friendService struct{ *Face }

// statusOf is a surge relation status in VMR's terms.
func statusOf(s walletv1.Friend_Status) vmrpb.FriendStatus {
	switch s {
	case walletv1.Friend_FRIEND:
		return vmrpb.FriendStatus_FRIEND
	case walletv1.Friend_WAITING:
		return vmrpb.FriendStatus_WAITING
	case walletv1.Friend_NOT_ANSWER:
		return vmrpb.FriendStatus_NOT_ANSWER
	case walletv1.Friend_UNFRIENDED:
		return vmrpb.FriendStatus_UNFRIENDED
	}
	return vmrpb.FriendStatus_NOTHING
}

// GetFriendList lists friends and open requests.
func (s friendService) GetFriendList(ctx context.Context, c caller, _ *vmrpb.Empty) (*vmrpb.FriendListResponse, error) {
	res, err := s.local.GetFriendList(ctx, c.user)
	if err != nil {
		return &vmrpb.FriendListResponse{Error: failure(err)}, nil
	}
	out := &vmrpb.FriendListResponse{FriendInfo: make([]*vmrpb.FriendInfo, len(res.Friends))}
	for i, f := range res.Friends {
		out.FriendInfo[i] = &vmrpb.FriendInfo{
			Id: int64(f.User.Id), Username: f.User.Username, Name: f.User.Name,
			Online: f.User.Online, FriendStatus: statusOf(f.Status),
		}
	}
	return out, nil
}

// GetChatFriendList lists friends and former friends (UNFRIENDED) by
// their newest message, with unread counts and presence.
func (s friendService) GetChatFriendList(ctx context.Context, c caller, _ *vmrpb.Empty) (*vmrpb.FriendListResponse, error) {
	res, err := s.local.GetChatFriendList(ctx, c.user)
	if err != nil {
		return &vmrpb.FriendListResponse{Error: failure(err)}, nil
	}
	out := &vmrpb.FriendListResponse{FriendInfo: make([]*vmrpb.FriendInfo, len(res.Friends))}
	for i, f := range res.Friends {
		info := &vmrpb.FriendInfo{
			Id: int64(f.User.Id), Username: f.User.Username, Name: f.User.Name, Online: f.User.Online,
			NumUnreadMessage: int64(f.UnreadCount), FriendStatus: statusOf(f.Status),
		}
		if m := f.LastMessage; m != nil {
			msg := chatMessageOf(m)
			info.LastMessage, info.LastMessageType = msg.Message, msg.Type
			info.LastMessageSender, info.LastMessageTimestamp = msg.SenderID, msg.Timestamp
		}
		out.FriendInfo[i] = info
	}
	return out, nil
}

// QueryUser finds users whose username or name contains the query.
func (s friendService) QueryUser(_ context.Context, c caller, m *vmrpb.UserListRequest) (*vmrpb.UserListResponse, error) {
	out := &vmrpb.UserListResponse{}
	if m.QueryString == "" {
		return out, nil
	}
	for _, u := range s.local.SearchUsers(m.QueryString, searchLimit) {
		out.User = append(out.User, &vmrpb.UserResponse{
			Id: int64(u.Id), Username: u.Username, Name: u.Name, FriendStatus: statusOf(s.local.Relation(c.user, u.Id)),
		})
	}
	return out, nil
}

// ClearUnreadMessage marks the conversation with a friend read.
func (s friendService) ClearUnreadMessage(ctx context.Context, c caller, m *vmrpb.ClearUnreadMessageRequest) (*vmrpb.ClearUnreadMessageResponse, error) {
	_, err := s.local.MarkRead(ctx, c.user, &walletv1.MarkReadRequest{PeerId: uint64(m.FriendId)})
	if err != nil && !(codeOf(err) == connect.CodeNotFound && s.known(m.FriendId)) {
		return &vmrpb.ClearUnreadMessageResponse{Error: failure(err)}, nil
	}
	return &vmrpb.ClearUnreadMessageResponse{}, nil // no conversation yet: nothing unread
}

func (s friendService) known(id int64) bool {
	_, ok := s.local.User(uint64(id))
	return id > 0 && ok
}

// SetFriendStatus sends, accepts, rejects or withdraws a friend request,
// or removes a friend (for both users). The other user's WebSockets are told of an
// acceptance (ACCEPT) or a removal (REMOVE_FRIEND) by relayEvents.
func (s friendService) SetFriendStatus(ctx context.Context, c caller, m *vmrpb.SetFriendStatusRequest) (*vmrpb.SetFriendStatusResponse, error) {
	if m.FriendId <= 0 {
		return &vmrpb.SetFriendStatusResponse{Error: replyError(vmrpb.ErrorCode_FAILUE, "no such user")}, nil
	}
	peer := uint64(m.FriendId)
	var err error
	switch m.Type {
	case vmrpb.SetFriendStatusRequest_ADD_FRIEND:
		_, err = s.local.AddFriend(ctx, c.user, peer)
	case vmrpb.SetFriendStatusRequest_ACCEPT_FRIEND:
		_, err = s.local.AcceptFriend(ctx, c.user, peer)
	case vmrpb.SetFriendStatusRequest_REJECT_FRIEND:
		_, err = s.local.RejectFriend(ctx, c.user, peer)
	case vmrpb.SetFriendStatusRequest_REMOVE_FRIEND:
		_, err = s.local.RemoveFriend(ctx, c.user, peer)
	default:
		return &vmrpb.SetFriendStatusResponse{Error: replyError(vmrpb.ErrorCode_FAILUE, fmt.Sprintf("unknown type %v", m.Type))}, nil
	}
	if err != nil {
		return &vmrpb.SetFriendStatusResponse{Error: failure(err)}, nil
	}
	return &vmrpb.SetFriendStatusResponse{}, nil
}

// systemUserID stands, in VMR's history, for the other side of money that
// came from or went to an account of no user. VMR's ids start at 1, and
// VMR's app names a history row's other side by GetUserInfo, failing on
// any reply without a user.
const systemUserID = 0

// systemUser is what GetUserInfo answers for systemUserID: the username
// has a '@' no user's may have, the name is "System" in the app's
// language, and it is nobody's friend (FRIEND is VMR's zero value).
func systemUser() *vmrpb.UserResponse {
	return &vmrpb.UserResponse{Id: systemUserID, Username: "@system", Name: "Hệ thống", FriendStatus: vmrpb.FriendStatus_NOTHING}
}

// GetUserInfo is a user's names and their relation to the caller, or
// systemUser.
func (s friendService) GetUserInfo(_ context.Context, c caller, m *vmrpb.GetUserInfoRequest) (*vmrpb.GetUserInfoResponse, error) {
	if m.UserId == systemUserID {
		return &vmrpb.GetUserInfoResponse{User: systemUser()}, nil
	}
	u, ok := s.local.User(uint64(m.UserId))
	if m.UserId < 0 || !ok {
		return &vmrpb.GetUserInfoResponse{Error: replyError(vmrpb.ErrorCode_RECEIVER_NOT_EXIST, "no such user")}, nil
	}
	return &vmrpb.GetUserInfoResponse{User: &vmrpb.UserResponse{
		Id: int64(u.Id), Username: u.Username, Name: u.Name, FriendStatus: statusOf(s.local.Relation(c.user, u.Id)),
	}}, nil
}
