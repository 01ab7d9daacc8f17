// Package audit is the vfs-svc contract of the tool-call audit log:
// registry-svc publishes what each call was (never its argument values),
// vfs-svc stores it, and an account (or the operator) reads it back.
package audit

import (
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

var (
	// Recorded carries a batch of tool-call records from registry-svc.
	// vfs-svc subscribes in a queue group, so one replica stores each batch.
	Recorded = wire.Event[RecordBatch]{Subject: "events.audit.recorded"}
	// Query reads an account's records, or every account's for the operator.
	Query = wire.Endpoint[QueryRequest, QueryResponse]{Subject: "vfs.audit.query", Idempotent: true}
)

// Contracts lists every endpoint and event of the package, for the golden
// tests and for the server's check that it serves them all.
func Contracts() []wire.Contract { return []wire.Contract{Recorded, Query} }

// MaxLimit bounds the records one query returns.
const MaxLimit = 500

// Record is one tool call as the audit log keeps it. It holds the names of
// the arguments and the sizes of arguments and result, never their values.
type Record struct {
	// ID is assigned by vfs-svc when stored; 0 in a published batch.
	ID        int64     `json:"id,omitempty"`
	Time      time.Time `json:"time"`
	AccountID string    `json:"account_id,omitempty"`
	// CallerKind is "agent" when an agent called the tool, "mcp" for a
	// plain MCP client.
	CallerKind string `json:"caller_kind"`
	Agent      string `json:"agent,omitempty"`
	Tool       string `json:"tool"`
	// Outcome is "ok", "tool_error" or the wire error code of a failed call.
	Outcome       string   `json:"outcome"`
	DurationMS    float64  `json:"duration_ms"`
	ArgumentBytes int      `json:"argument_bytes"`
	ResultBytes   int      `json:"result_bytes"`
	ArgumentKeys  []string `json:"argument_keys,omitempty"`
}

// RecordBatch is what registry-svc publishes: the calls recorded since its
// last batch.
type RecordBatch struct {
	Records []Record `json:"records"`
}

// QueryRequest asks for the newest records first. AccountID names the
// account; All (the operator's view, granted to the CLI only) reads every
// account and ignores AccountID.
type QueryRequest struct {
	AccountID string `json:"account_id,omitempty"`
	All       bool   `json:"all,omitempty"`
	// Limit is 1 to MaxLimit; 0 means 50.
	Limit int `json:"limit,omitempty"`
	// Before pages back: only records with an id below it.
	Before int64 `json:"before,omitempty"`
}

// QueryResponse holds the records, newest first.
type QueryResponse struct {
	Records []Record `json:"records"`
}
