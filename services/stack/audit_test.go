package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/gateway"
	"github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/audit"
	"github.com/mirobody/mirobody-go/vfs-svc"
)

// TestAuditLog: a Python tool called over /mcp shows up
// in the caller's GET /api/audit with their argument names and sizes; no
// argument value is stored anywhere in the row; another account sees none
// of it; mirobody audit prints the account's calls and --all everyone's.
func TestAuditLog(t *testing.T) {
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log := servicetest.Logger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	tools, err := filepath.Abs("testdata/chat-tools")
	must(t, err)
	cfg.MCPToolDirs = []string{tools, "builtin"}
	gw := gateway.New(gateway.Options{Config: cfg, Log: log})
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}), gw)
	base := "http://" + gw.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	newKey := func(email string) string { return newAccountKey(ctx, t, natsURL, email) }
	aliceKey, bobKey := newKey("alice@example.com"), newKey("bob@example.com")

	// The values are distinctive strings so that finding one anywhere is
	// unambiguous.
	const secretA, secretB = 918273645, 564738291
	alice := mcpSession(t, base+"/mcp", aliceKey)
	res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": secretA, "b": secretB}})
	must(t, err)
	if res.IsError {
		t.Fatalf("add failed: %+v", res)
	}

	type page struct {
		Records []audit.Record `json:"records"`
	}
	get := func(key, query string) page {
		t.Helper()
		code, body := apiDo(t, http.MethodGet, base+"/api/audit"+query, key, "")
		if code != http.StatusOK {
			t.Fatalf("GET /api/audit%s: %d %s", query, code, body)
		}
		for _, secret := range []string{"918273645", "564738291"} {
			if strings.Contains(string(body), secret) {
				t.Fatalf("GET /api/audit shows an argument value: %s", body)
			}
		}
		var p page
		must(t, json.Unmarshal(body, &p))
		return p
	}
	var rec audit.Record
	servicetest.Eventually(t, 10*time.Second, func() bool {
		p := get(aliceKey, "")
		if len(p.Records) > 0 {
			rec = p.Records[0]
		}
		return len(p.Records) > 0
	}, "alice's call is in the audit log")
	if rec.Tool != "add" || rec.CallerKind != "mcp" || rec.Outcome != "ok" || strings.Join(rec.ArgumentKeys, ",") != "a,b" ||
		rec.ArgumentBytes != len(`{"a":918273645,"b":564738291}`) || rec.ResultBytes == 0 || rec.ID == 0 || rec.Time.IsZero() {
		t.Errorf("alice's record: %+v", rec)
	}
	if p := get(aliceKey, "?limit=1&before="+strconv.FormatInt(rec.ID, 10)); len(p.Records) != 0 {
		t.Errorf("a page before the only record: %+v", p.Records)
	}
	if code, body := apiDo(t, http.MethodGet, base+"/api/audit?limit=x", aliceKey, ""); code != http.StatusBadRequest {
		t.Errorf("limit=x: %d %s", code, body)
	}
	if p := get(bobKey, ""); len(p.Records) != 0 {
		t.Errorf("bob sees alice's calls: %+v", p.Records)
	}

	// The stored row itself holds no argument value, in any column.
	var row string
	must(t, db.Pool.QueryRow(ctx, `SELECT row_to_json(a)::text FROM audit_log a WHERE id = $1`, rec.ID).Scan(&row))
	if strings.Contains(row, "918273645") || strings.Contains(row, "564738291") || !strings.Contains(row, `"argument_keys":["a","b"]`) {
		t.Errorf("stored row: %s", row)
	}

	// The CLI: the account's view and the operator's.
	t.Setenv("NATS_URL", natsURL)
	cli := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(ctx, append(append([]string{"audit"}, args...), "--config", "testdata/empty.yaml"), &out, &errOut); code != 0 {
			t.Fatalf("mirobody audit %v = %d: %s %s", args, code, out.String(), errOut.String())
		}
		return out.String()
	}
	if out := cli("--account", "alice@example.com"); !strings.Contains(out, "add") || !strings.Contains(out, "a,b") || !strings.Contains(out, "mcp") ||
		strings.Contains(out, "918273645") {
		t.Errorf("mirobody audit --account alice:\n%s", out)
	}
	if out := cli("--account", "bob@example.com"); !strings.Contains(out, "no tool calls") {
		t.Errorf("mirobody audit --account bob:\n%s", out)
	}
	if out := cli("--all"); !strings.Contains(out, "ACCOUNT") || !strings.Contains(out, "add") {
		t.Errorf("mirobody audit --all:\n%s", out)
	}
}
