package wire

import "github.com/nats-io/nuid"

// StreamPrefix is the first token of stream subjects: subjects named in a
// request on which the responder publishes many events later (agent run
// events, tool progress). They are not reply inboxes, so NATS permissions
// can let responders publish there without opening anyone's inbox
// (services/natsx/design.md).
const StreamPrefix = "_STREAM"

// NewStream returns a fresh stream subject.
func NewStream() string { return StreamPrefix + "." + nuid.Next() }
