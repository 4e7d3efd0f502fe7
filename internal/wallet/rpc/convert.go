package rpc

import (
	"strconv"

	"google.golang.org/protobuf/types/known/timestamppb"

	walletv1 "github.com/surge-dev/surge/internal/gen/surge/wallet/v1"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// Conversions from the domain to the wire. Those that read presence run
// under the service's read lock.

func (s *Service) userPB(u *social.User) *walletv1.User {
	return &walletv1.User{Id: uint64(u.ID), Username: u.Username, Name: u.Name, Online: s.state.Online(u.ID)}
}

func messagePB(m *social.Message) *walletv1.Message {
	typ := walletv1.Message_TEXT
	if m.Kind == social.KindTransfer {
		typ = walletv1.Message_TRANSFER
	}
	return &walletv1.Message{
		Id: m.Seq, FromUserId: uint64(m.From), ToUserId: uint64(m.To), Type: typ,
		Text: m.Text, Amount: m.Amount, TransferId: m.TransferID, SentAt: timestamppb.New(m.At),
	}
}

var friendStatusPB = [...]walletv1.Friend_Status{
	social.StatusFriend:     walletv1.Friend_FRIEND,
	social.StatusWaiting:    walletv1.Friend_WAITING,
	social.StatusNotAnswer:  walletv1.Friend_NOT_ANSWER,
	social.StatusUnfriended: walletv1.Friend_UNFRIENDED,
}

// Page sizes of GetHistory and GetMessages.
const (
	defaultPageSize = 20
	maxPageSize     = 100
)

// pageSize validates a requested page size; 0 means the default.
func pageSize(n int32) (int, error) {
	switch {
	case n == 0:
		return defaultPageSize, nil
	case n < 0 || n > maxPageSize:
		return 0, invalid("page_size must be between 0 and %d", maxPageSize)
	}
	return int(n), nil
}

// Page tokens are the decimal seq of the page's last item. Clients treat
// them as opaque.

func pageToken(seq uint64) string {
	if seq == 0 {
		return ""
	}
	return strconv.FormatUint(seq, 10)
}

func parsePageToken(tok string) (uint64, error) {
	if tok == "" {
		return 0, nil
	}
	seq, err := strconv.ParseUint(tok, 10, 64)
	if err != nil || seq == 0 {
		return 0, invalid("page_token is not one this server issued")
	}
	return seq, nil
}
