package registrysvc

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/audit"
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

// TestAuditBatches: calls wait for their batch, which leaves once the
// linger is over, once it is full, or at close; none is lost.
func TestAuditBatches(t *testing.T) {
	tests := []struct {
		name   string
		linger time.Duration
		calls  int
		closed bool  // close the auditor before reading
		want   []int // batch sizes
	}{
		{name: "linger over", linger: 5 * time.Millisecond, calls: 3, want: []int{3}},
		{name: "full", linger: time.Hour, calls: maxAuditBatch, want: []int{maxAuditBatch}},
		{name: "close flushes", linger: time.Hour, calls: maxAuditBatch + 2, closed: true, want: []int{maxAuditBatch, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := servicetest.NATS(t)
			nc := servicetest.Conn(t, url)
			batches := make(chan *nats.Msg, 16)
			if _, err := nc.ChanSubscribe(audit.Recorded.Subject, batches); err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			a := startAuditor(servicetest.Client(t, url), servicetest.Logger(t), tt.linger)
			t.Cleanup(a.close)
			for i := range tt.calls {
				a.record(auditCall{at: time.Now(), tool: "echo", outcome: "ok", args: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)})
			}
			if tt.closed {
				a.close()
			}
			for i, want := range tt.want {
				select {
				case m := <-batches:
					b, err := audit.Recorded.Decode(m)
					if err != nil || len(b.Records) != want {
						t.Fatalf("batch %d: %d records, want %d (%v)", i, len(b.Records), want, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("batch %d never came", i)
				}
			}
		})
	}
}
