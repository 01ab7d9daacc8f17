package vfssvc

import (
	"context"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/audit"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestAuditStoreQueryPrune: a published batch is stored once, an account
// reads only its own records newest first and pages with before, the
// operator reads all, and records past the retention are deleted.
func TestAuditStoreQueryPrune(t *testing.T) {
	e := start(t, func(c *conf.Config) { c.AuditRetentionDays = 7 })
	ctx := context.Background()
	// The retention loop deletes at start as well as hourly; stop it first,
	// so the 30-day-old record below is deleted only where the test says
	// (it raced the insert once in CI and the "all" case saw two records).
	e.svc.stopPrune()
	<-e.svc.pruned
	now := time.Now().UTC().Truncate(time.Millisecond)
	batch := &audit.RecordBatch{Records: []audit.Record{
		{Time: now, AccountID: "a", CallerKind: "mcp", Tool: "echo", Outcome: "ok", DurationMS: 1.5, ArgumentBytes: 20, ResultBytes: 7, ArgumentKeys: []string{"text"}},
		{Time: now, AccountID: "a", CallerKind: "agent", Agent: "deep", Tool: "grep", Outcome: "tool_error", DurationMS: 3},
		{Time: now.Add(-30 * 24 * time.Hour), AccountID: "b", CallerKind: "mcp", Tool: "old", Outcome: "ok"},
	}}
	if err := audit.Recorded.Publish(ctx, e.client, batch); err != nil {
		t.Fatal(err)
	}
	servicetest.Eventually(t, 10*time.Second, func() bool {
		r, err := audit.Query.Call(ctx, e.client, &audit.QueryRequest{All: true})
		return err == nil && len(r.Records) == 3
	}, "the batch is stored")

	tests := []struct {
		name  string
		req   audit.QueryRequest
		tools []string
		code  wire.Code
	}{
		{name: "account", req: audit.QueryRequest{AccountID: "a"}, tools: []string{"grep", "echo"}},
		{name: "page", req: audit.QueryRequest{AccountID: "a", Limit: 1}, tools: []string{"grep"}},
		{name: "other account", req: audit.QueryRequest{AccountID: "c"}},
		{name: "all", req: audit.QueryRequest{All: true}, tools: []string{"old", "grep", "echo"}},
		{name: "no account", req: audit.QueryRequest{}, code: wire.InvalidArgument},
		{name: "limit too large", req: audit.QueryRequest{AccountID: "a", Limit: audit.MaxLimit + 1}, code: wire.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := audit.Query.Call(ctx, e.client, &tt.req)
			if tt.code != "" {
				if wire.CodeOf(err) != tt.code {
					t.Fatalf("err %v, want %s", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, rec := range r.Records {
				got = append(got, rec.Tool)
			}
			if len(got) != len(tt.tools) {
				t.Fatalf("tools %v, want %v", got, tt.tools)
			}
			for i := range got {
				if got[i] != tt.tools[i] {
					t.Fatalf("tools %v, want %v", got, tt.tools)
				}
			}
		})
	}

	first, err := audit.Query.Call(ctx, e.client, &audit.QueryRequest{AccountID: "a", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	next, err := audit.Query.Call(ctx, e.client, &audit.QueryRequest{AccountID: "a", Before: first.Records[0].ID})
	if err != nil || len(next.Records) != 1 || next.Records[0].Tool != "echo" || next.Records[0].ArgumentKeys[0] != "text" {
		t.Fatalf("next page %+v, %v", next, err)
	}

	if err := e.svc.deleteOldAudit(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := audit.Query.Call(ctx, e.client, &audit.QueryRequest{All: true})
	if err != nil || len(all.Records) != 2 {
		t.Fatalf("after the retention delete: %+v, %v", all, err)
	}
}
