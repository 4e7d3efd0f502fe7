package vmr

import (
	"errors"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	vmrpb "github.com/surge-dev/surge/internal/gen/vmr"
)

// replyError is the error field of a reply: code, with err's message.
func replyError(code vmrpb.ErrorCode, msg string) *vmrpb.Error {
	return &vmrpb.Error{Code: code, Message: msg}
}

// failure is the error field for err, a surge.wallet.v1 error: a refusal
// the user can act on keeps its message under FAILUE, anything else is
// INTERNAL_SERVER_ERROR.
func failure(err error) *vmrpb.Error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		switch ce.Code() {
		case connect.CodeInternal, connect.CodeUnknown, connect.CodeDataLoss, connect.CodeCanceled, connect.CodeDeadlineExceeded:
		default:
			return replyError(vmrpb.ErrorCode_FAILUE, ce.Message())
		}
	}
	return replyError(vmrpb.ErrorCode_INTERNAL_SERVER_ERROR, "internal error")
}

// codeOf is err's status code, Unknown if it has none.
func codeOf(err error) connect.Code {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code()
	}
	return connect.CodeUnknown
}

// reasonOf is the google.rpc.ErrorInfo reason of err, if any.
func reasonOf(err error) string {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return ""
	}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if info, ok := v.(*errdetails.ErrorInfo); ok {
				return info.GetReason()
			}
		}
	}
	return ""
}

// messageOf is err's message without its code.
func messageOf(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Message()
	}
	return err.Error()
}
