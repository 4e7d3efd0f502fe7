package ledger

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code, as sent to clients.
type Code string

// Error codes. Their spelling is part of the API.
const (
	CodeInvalidArgument     Code = "invalid_argument"
	CodeAccountNotFound     Code = "account_not_found"
	CodeAccountExists       Code = "account_exists"
	CodeTransferNotFound    Code = "transfer_not_found"
	CodeIdempotencyConflict Code = "idempotency_conflict"
	CodeInsufficientFunds   Code = "insufficient_funds"
	CodeCurrencyMismatch    Code = "currency_mismatch"
	CodeSameAccount         Code = "same_account"
	CodeTransferNotPending  Code = "transfer_not_pending"
	CodeExceedsPending      Code = "exceeds_pending"
	CodeBatchAborted        Code = "batch_aborted"
	CodeOverloaded          Code = "overloaded"
	// CodeStorageFull and CodeStorageUnavailable refuse a write because
	// the disk is full or failed: nothing of it was stored, reads go on.
	CodeStorageFull        Code = "storage_full"
	CodeStorageUnavailable Code = "storage_unavailable"
)

// Error is a domain error: a Code for machines and a Detail for people.
type Error struct {
	Code   Code
	Detail string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Detail }

// Errorf makes an *Error with a formatted detail.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// CodeOf returns the Code of err, or "" if err is not (and wraps no) *Error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
