package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
)

// Contract is one subject of a contract package together with its message
// types: an Endpoint or an Event. Contract packages list theirs, so that a
// test can check every message type against its golden file.
type Contract interface {
	// SubjectName is the subject (an Event's may end in the wildcard *).
	SubjectName() string
	// Messages returns a new zero value of each message type carried on
	// the subject: request then response for an Endpoint, the event for an
	// Event.
	Messages() []any
	// Requested is true for an Endpoint (a service answers it) and false
	// for an Event (published).
	Requested() bool
}

// Endpoint names a request/reply subject, <service>.<group…>.<verb>, and
// the types of both sides. The contract package declares one per subject;
// its client calls through it and the server registers its handler with
// Serve, so a subject or type mismatch between the two does not compile.
type Endpoint[Req, Resp any] struct {
	Subject string
	// Idempotent says that running the request twice has the effect of
	// running it once (reads, lists, verifications, writes keyed so that a
	// repeat is recognised). When the replica handling it goes away
	// mid-request, Call sends it again, to another replica, within the
	// caller's deadline; a request that is not idempotent fails with
	// unavailable instead (IsLost), since it may or may not have run.
	Idempotent bool
}

// SubjectName returns e.Subject.
func (e Endpoint[Req, Resp]) SubjectName() string { return e.Subject }

// Messages returns a new Req and a new Resp.
func (e Endpoint[Req, Resp]) Messages() []any { return []any{new(Req), new(Resp)} }

// Requested is true: a service answers e.
func (e Endpoint[Req, Resp]) Requested() bool { return true }

// Call sends req to e's subject and decodes the reply into a new Resp. The
// context's deadline (or the client default) travels in the request
// headers, together with the request id and W3C trace context. Every
// failure is an *Error: no responders is unavailable, a timeout is
// deadline_exceeded, a responder that went away mid-request is retried or
// unavailable (see Idempotent).
func (e Endpoint[Req, Resp]) Call(ctx context.Context, c *Client, req *Req) (*Resp, error) {
	var resp Resp
	if err := c.call(ctx, e.Subject, e.Idempotent, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// SysPing is the endpoint <service>.sys.ping every Service answers.
func SysPing(service string) Endpoint[Empty, PingResponse] {
	return Endpoint[Empty, PingResponse]{Subject: service + ".sys.ping", Idempotent: true}
}

// SysInfo is the endpoint <service>.sys.info every Service answers.
func SysInfo(service string) Endpoint[Empty, InfoResponse] {
	return Endpoint[Empty, InfoResponse]{Subject: service + ".sys.info", Idempotent: true}
}

// Event names a subject that is published, not requested, and the type of
// its messages. Its subject may end in the wildcard token "*" for a family
// of subjects (events.data.changed.<account>, a stream's _STREAM.<id>):
// For names one member, and subscribers subscribe to Subject itself.
type Event[T any] struct {
	Subject string
}

// SubjectName returns e.Subject.
func (e Event[T]) SubjectName() string { return e.Subject }

// Messages returns a new T.
func (e Event[T]) Messages() []any { return []any{new(T)} }

// Requested is false: e is published.
func (e Event[T]) Requested() bool { return false }

// For returns the member of the family e whose last token is token.
func (e Event[T]) For(token string) Event[T] {
	return Event[T]{Subject: strings.TrimSuffix(e.Subject, "*") + token}
}

// On returns e published on subject instead: a stream subject a request
// named (it is a member of e's family, _STREAM.<id>).
func (e Event[T]) On(subject string) Event[T] { return Event[T]{Subject: subject} }

// Token returns what the wildcard of e's subject matched in subject, a
// member of the family.
func (e Event[T]) Token(subject string) string {
	return strings.TrimPrefix(subject, strings.TrimSuffix(e.Subject, "*"))
}

// Publish sends v on e's subject, with the request id and trace context in
// its headers. A family's subject must be narrowed with For first.
func (e Event[T]) Publish(ctx context.Context, c *Client, v *T) error {
	if strings.HasSuffix(e.Subject, "*") {
		return fmt.Errorf("publishing on %s: a wildcard subject names no member of the family", e.Subject)
	}
	return c.Publish(ctx, e.Subject, v)
}

// Decode reads one message of e.
func (e Event[T]) Decode(msg *nats.Msg) (*T, error) {
	var v T
	if err := json.Unmarshal(msg.Data, &v); err != nil {
		return nil, fmt.Errorf("decoding the event on %s: %w", msg.Subject, err)
	}
	return &v, nil
}
