// Package wire is the typed request/reply layer every Mirobody service speaks
// over NATS: the error envelope, the request headers (deadline, request id,
// trace context), a client call helper and a handler adapter for nats.go micro.
//
// Statistics: micro counts an endpoint's requests, errors and processing
// time around its message callback, and Handle's callback only hands the
// request to a goroutine and returns, so that one endpoint serves many
// requests at once. micro's top-level per-endpoint fields in $SRV.STATS
// (`nats micro stats`) therefore count requests but show no errors and
// about 0 ms, and micro offers no way to set them from outside. wire keeps
// its own account of every endpoint and serves it as that endpoint's stats
// data (EndpointStats): read the numbers there. See design.md.
package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
)

// Code is one of the closed set of error codes that cross service boundaries.
type Code string

// The closed set of codes (services/wire/design.md "Error codes"). The gateway
// maps each of them to HTTP, JSON-RPC and MCP in one table.
const (
	InvalidArgument    Code = "invalid_argument"
	NotFound           Code = "not_found"
	AlreadyExists      Code = "already_exists"
	PermissionDenied   Code = "permission_denied"
	Unauthenticated    Code = "unauthenticated"
	FailedPrecondition Code = "failed_precondition"
	ResourceExhausted  Code = "resource_exhausted"
	Unavailable        Code = "unavailable"
	DeadlineExceeded   Code = "deadline_exceeded"
	Internal           Code = "internal"
	IsDir              Code = "is_dir"
	NotDir             Code = "not_dir"
	NotEmpty           Code = "not_empty"
)

// Codes lists every valid code, in a stable order.
var Codes = []Code{
	InvalidArgument, NotFound, AlreadyExists, PermissionDenied, Unauthenticated,
	FailedPrecondition, ResourceExhausted, Unavailable, DeadlineExceeded, Internal,
	IsDir, NotDir, NotEmpty,
}

// Valid reports whether c belongs to the closed code set.
func (c Code) Valid() bool {
	for _, k := range Codes {
		if c == k {
			return true
		}
	}
	return false
}

// Error is the envelope every failed request carries on the wire.
type Error struct {
	Code    Code           `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`

	// cause keeps a local error (for example context.Canceled) reachable
	// through errors.Is without ever sending it over the wire.
	cause error
}

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns a copy of e carrying the given details.
func (e *Error) WithDetails(details map[string]any) *Error {
	c := *e
	c.Details = details
	return &c
}

// Error implements error.
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Unwrap returns the local cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &wire.Error{Code: wire.NotFound}) works.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// CodeOf returns the wire code of err: its own code when it is (or wraps) an
// *Error, deadline_exceeded for context errors, unavailable for missing
// responders, and internal for anything else.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, context.Canceled):
		return DeadlineExceeded
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrDisconnected):
		return Unavailable
	}
	return Internal
}

// ReasonTooLarge is the details "reason" of a resource_exhausted error
// whose payload is over a size limit (the NATS max payload, a body limit),
// as opposed to a rate or quota.
const ReasonTooLarge = "too_large"

// TooLarge returns the resource_exhausted error for a payload (what:
// "request", "reply", "upload"...) of size bytes over limit bytes; size 0
// means unknown. Details carry the reason and the limit, so that callers
// can tell it from a rate limit without parsing the message.
func TooLarge(what string, size, limit int64) *Error {
	msg := fmt.Sprintf("%s too large: the limit is %d bytes", what, limit)
	if size > 0 {
		msg = fmt.Sprintf("%s too large: %d bytes, the limit is %d bytes", what, size, limit)
	}
	return &Error{Code: ResourceExhausted, Message: msg, Details: map[string]any{"reason": ReasonTooLarge, "limit_bytes": limit}}
}

// IsTooLarge reports whether err is (or wraps) a TooLarge error, also after
// it crossed the wire.
func IsTooLarge(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == ResourceExhausted && e.Details["reason"] == ReasonTooLarge
}

// IsCode reports whether err carries the given code.
func IsCode(err error, code Code) bool { return CodeOf(err) == code }

// fromTransport turns an error from a NATS request into an *Error, keeping the
// original error as its cause. The message names the service, never the
// subject: it may reach an HTTP client, and subjects are internal.
func fromTransport(subject string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	code := CodeOf(err)
	service := serviceOf(subject)
	msg := ""
	switch code {
	case Unavailable:
		msg = fmt.Sprintf("the %s service is unavailable", service)
	case DeadlineExceeded:
		if errors.Is(err, context.Canceled) {
			msg = fmt.Sprintf("the request to the %s service was cancelled", service)
		} else {
			msg = fmt.Sprintf("the %s service did not answer in time", service)
		}
	default:
		msg = fmt.Sprintf("the request to the %s service failed", service)
	}
	return &Error{Code: code, Message: msg, cause: err}
}

// serviceOf is the service a subject belongs to (its first token).
func serviceOf(subject string) string {
	service, _, _ := strings.Cut(subject, ".")
	return service
}
