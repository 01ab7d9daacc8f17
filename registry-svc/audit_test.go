package registrysvc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
)

// TestAuditRecord: a record names the arguments and counts their bytes but
// holds none of their values.
func TestAuditRecord(t *testing.T) {
	tests := []struct {
		name   string
		caller registry.Caller
		args   string
		keys   []string
		kind   string
	}{
		{name: "object", caller: registry.Caller{AccountID: "a"}, args: `{"z":"hunter2","a":{"b":"secret"}}`, keys: []string{"a", "z"}, kind: "mcp"},
		{name: "agent", caller: registry.Caller{AccountID: "a", Agent: agent.AgentDeep}, args: `{"q":"x"}`, keys: []string{"q"}, kind: "agent"},
		{name: "empty", args: ``, kind: "mcp"},
		{name: "not an object", args: `["hunter2"]`, kind: "mcp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := auditCall{at: time.Now(), caller: tt.caller, tool: "echo", outcome: "ok", duration: 1500 * time.Microsecond,
				args: json.RawMessage(tt.args), result: 9}.record()
			if !reflect.DeepEqual(r.ArgumentKeys, tt.keys) || r.CallerKind != tt.kind || r.ArgumentBytes != len(tt.args) ||
				r.ResultBytes != 9 || r.DurationMS != 1.5 {
				t.Fatalf("record %+v", r)
			}
			b, _ := json.Marshal(r)
			if strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "secret") {
				t.Fatalf("the record holds an argument value: %s", b)
			}
		})
	}
}
