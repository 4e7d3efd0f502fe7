package rpc

import (
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/surge-dev/surge/internal/ledger"
	"github.com/surge-dev/surge/internal/store"
	"github.com/surge-dev/surge/internal/wallet/social"
)

// errorDomain names surge in the google.rpc.ErrorInfo details it sends.
const errorDomain = "surge"

// Reasons of refusals, sent as google.rpc.ErrorInfo.reason. Their
// spelling is part of the API.
const (
	reasonInsufficientFunds   = "INSUFFICIENT_FUNDS"
	reasonBelowMinimum        = "BELOW_MINIMUM"
	reasonSameAccount         = "SAME_ACCOUNT"
	reasonReceiverNotFound    = "RECEIVER_NOT_FOUND"
	reasonIdempotencyConflict = "IDEMPOTENCY_CONFLICT"
	reasonNotFriends          = "NOT_FRIENDS"
	reasonNoFriendRequest     = "NO_FRIEND_REQUEST"
	reasonRateLimited         = "RATE_LIMITED"
	reasonOverloaded          = "OVERLOADED"
	reasonStorageFull         = "STORAGE_FULL"
	reasonStorageUnavailable  = "STORAGE_UNAVAILABLE"
)

var (
	errInternal      = connect.NewError(connect.CodeInternal, errors.New("internal error"))
	errNoToken       = connect.NewError(connect.CodeUnauthenticated, errors.New(`missing "authorization: Bearer <token>"`))
	errBadToken      = connect.NewError(connect.CodeUnauthenticated, errors.New("invalid or expired token"))
	errBadLogin      = connect.NewError(connect.CodeUnauthenticated, errors.New("wrong username or password"))
	errBadPassword   = connect.NewError(connect.CodeUnauthenticated, errors.New("wrong password"))
	errNotYours      = connect.NewError(connect.CodePermissionDenied, errors.New("you may only access your own wallet and conversations"))
	errTooManyLogins = refusal(connect.CodeResourceExhausted, reasonRateLimited, "too many failed attempts; try again later")
)

// refusal is an error with a google.rpc.ErrorInfo detail giving reason.
func refusal(code connect.Code, reason, format string, args ...any) *connect.Error {
	err := connect.NewError(code, fmt.Errorf(format, args...))
	if detail, derr := connect.NewErrorDetail(&errdetails.ErrorInfo{Reason: reason, Domain: errorDomain}); derr == nil {
		err.AddDetail(detail)
	}
	return err
}

func invalid(format string, args ...any) *connect.Error {
	return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(format, args...))
}

// socialError maps a refused social change to its status.
func socialError(err error) error {
	var e *social.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Code {
	case social.CodeNotFound:
		return connect.NewError(connect.CodeNotFound, e)
	case social.CodeExists:
		return connect.NewError(connect.CodeAlreadyExists, e)
	case social.CodeNotFriends:
		return refusal(connect.CodeFailedPrecondition, reasonNotFriends, "%s", e.Detail)
	case social.CodeNoRequest:
		return refusal(connect.CodeFailedPrecondition, reasonNoFriendRequest, "%s", e.Detail)
	default:
		return connect.NewError(connect.CodeInvalidArgument, e)
	}
}

// storageRefusal maps a write that the wallet's store refused for a full
// or failed disk to its status, as the ledger's own refusals are; nil for
// other errors.
func storageRefusal(err error) error {
	switch {
	case errors.Is(err, store.ErrFull):
		return refusal(connect.CodeResourceExhausted, reasonStorageFull, "storage full: writes are refused, reads are served")
	case errors.Is(err, store.ErrUnavailable):
		return refusal(connect.CodeUnavailable, reasonStorageUnavailable, "storage unavailable: writes are refused, reads are served")
	}
	return nil
}

// ledgerError maps a ledger refusal to its status; ok is false for faults.
func ledgerError(err error) (mapped error, ok bool) {
	var e *ledger.Error
	if !errors.As(err, &e) {
		return err, false
	}
	switch e.Code {
	case ledger.CodeInsufficientFunds:
		return refusal(connect.CodeFailedPrecondition, reasonInsufficientFunds, "insufficient funds: %s", e.Detail), true
	case ledger.CodeIdempotencyConflict:
		return refusal(connect.CodeAlreadyExists, reasonIdempotencyConflict, "request_id was used for another transfer: %s", e.Detail), true
	case ledger.CodeAccountNotFound:
		return refusal(connect.CodeNotFound, reasonReceiverNotFound, "%s", e.Detail), true
	case ledger.CodeSameAccount:
		return refusal(connect.CodeInvalidArgument, reasonSameAccount, "%s", e.Detail), true
	case ledger.CodeOverloaded:
		return refusal(connect.CodeUnavailable, reasonOverloaded, "%s", e.Detail), true
	case ledger.CodeStorageFull:
		return refusal(connect.CodeResourceExhausted, reasonStorageFull, "%s", e.Detail), true
	case ledger.CodeStorageUnavailable:
		return refusal(connect.CodeUnavailable, reasonStorageUnavailable, "%s", e.Detail), true
	case ledger.CodeInvalidArgument:
		return connect.NewError(connect.CodeInvalidArgument, e), true
	case ledger.CodeCurrencyMismatch:
		return connect.NewError(connect.CodeFailedPrecondition, e), true
	}
	return err, false
}
