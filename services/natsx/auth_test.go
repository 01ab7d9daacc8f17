package natsx_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/mirobody/mirobody-go/services/natsx"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

// An unauthenticated client and a key outside the table are refused, and
// Connect says which identity and which seed file failed, at once.
func TestSecureServerRefusesStrangers(t *testing.T) {
	s := servicetest.SecureNATS(t)
	if nc, err := nats.Connect(s.URL); !errors.Is(err, nats.ErrAuthorization) {
		if nc != nil {
			nc.Close()
		}
		t.Fatalf("connecting without credentials: err %v, want authorization violation", err)
	}

	stranger := filepath.Join(t.TempDir(), "stranger.nk")
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	if err := os.WriteFile(stranger, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	log := servicetest.Logger(t)
	for _, tt := range []struct{ name, seed string }{{"stranger", stranger}, {"anonymous", ""}} {
		t0 := time.Now()
		nc, err := natsx.Connect(natsx.ConnectOptions{URL: s.URL, Name: tt.name, SeedFile: tt.seed, Log: log})
		if err == nil {
			nc.Close()
			t.Fatalf("%s: connected", tt.name)
		}
		if !errors.Is(err, nats.ErrAuthorization) || !strings.Contains(err.Error(), tt.name) || !strings.Contains(err.Error(), tt.seed) {
			t.Errorf("%s: error %q does not name the refusal, the identity and its seed file", tt.name, err)
		}
		if strings.Contains(err.Error(), string(seed)) {
			t.Errorf("the error shows the seed")
		}
		if d := time.Since(t0); d > 5*time.Second {
			t.Errorf("%s: refusal took %s", tt.name, d)
		}
	}
	missing := filepath.Join(t.TempDir(), "gateway.nk")
	if _, err := natsx.Connect(natsx.ConnectOptions{URL: s.URL, Name: "gateway", SeedFile: missing, Log: log}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing seed file: err %v, want one naming %s", err, missing)
	}
	for _, id := range natsx.IdentityNames() {
		nc, err := natsx.Connect(natsx.ConnectOptions{URL: s.URL, Name: id, SeedFile: natsx.SeedFile(s.CredsDir, id), InboxPrefix: natsx.InboxPrefix(id), Log: log})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		nc.Close()
	}
}

// Each identity can do what the stack needs and nothing it must not: only
// vfs answers vfs.*, only the gateway reads streams, nobody reads another
// identity's replies, registry and agent cannot mint keys.
func TestIdentityPermissions(t *testing.T) {
	s := servicetest.SecureNATS(t)
	tests := []struct {
		id, op, subject string
		ok              bool
	}{
		{"vfs", "sub", "vfs.>", true},
		{"vfs", "sub", "$SRV.PING", true},
		{"vfs", "sub", "$SRV.INFO.vfs.abc", true},
		{"vfs", "pub", "events.keys.revoked", true},
		{"vfs", "pub", "events.data.changed.a1", true},
		{"vfs", "pub", "registry.tools.call", false},
		{"vfs", "pub", "_STREAM.x", false},
		{"gateway", "sub", "vfs.>", false},
		{"gateway", "sub", "vfs.keys.create", false},
		{"gateway", "sub", "$SRV.PING.vfs", false},
		{"gateway", "sub", "_STREAM.>", true},
		{"gateway", "sub", "_INBOX.gateway.x.*", true},
		{"gateway", "sub", "_INBOX.agent.>", false},
		{"gateway", "sub", "_LIVE.gateway.x.*", true},
		{"gateway", "sub", "_LIVE.agent.>", false},
		{"vfs", "pub", "_LIVE.gateway.x.1", true},
		{"cli", "sub", "_LIVE.cli.x.*", true},
		{"cli", "pub", "_LIVE.gateway.x.1", false},
		{"gateway", "sub", "_INBOX.>", false},
		{"gateway", "sub", "events.>", true},
		{"gateway", "pub", "vfs.keys.verify", true},
		{"gateway", "pub", "vfs.oauth.codes.consume", true},
		{"gateway", "pub", "events.gateway.token_revoked", true},
		{"gateway", "pub", "vfs.oauth.revocations.add", true},
		{"gateway", "pub", "vfs.oauth.revocations.list", true},
		{"gateway", "pub", "vfs.oauth.logins.attempt", true},
		{"registry", "pub", "vfs.oauth.revocations.add", false},
		{"registry", "pub", "vfs.oauth.logins.succeeded", false},
		{"agent", "pub", "vfs.oauth.revocations.list", false},
		{"agent", "pub", "vfs.oauth.logins.attempt", false},
		{"gateway", "pub", "agent.runs.start", true},
		{"gateway", "pub", "events.agent.session_deleted", true},
		{"gateway", "pub", "events.gateway.session_deleted", true},
		{"gateway", "pub", "events.keys.revoked", false},
		{"gateway", "pub", "_STREAM.x", false},
		{"registry", "pub", "vfs.keys.create", false},
		{"registry", "pub", "vfs.accounts.get", false},
		{"registry", "pub", "vfs.oauth.codes.create", false},
		{"registry", "pub", "vfs.data.health.query", true},
		{"registry", "pub", "_STREAM.x", true},
		{"registry", "pub", "events.registry.changed", true},
		{"registry", "pub", "events.keys.revoked", false},
		{"registry", "pub", "agent.runs.start", false},
		{"registry", "sub", "_STREAM.>", false},
		{"registry", "sub", "vfs.>", false},
		{"agent", "pub", "vfs.keys.create", false},
		{"agent", "pub", "vfs.oauth.refresh.create", false},
		{"agent", "pub", "vfs.fs.write", true},
		{"agent", "pub", "registry.tools.call", true},
		{"agent", "pub", "_STREAM.x", true},
		{"agent", "pub", "_INBOX.gateway.x", false},
		{"agent", "sub", "agent.runs.cancel", true},
		{"agent", "sub", "registry.>", false},
		{"cli", "pub", "vfs.keys.create", true},
		{"cli", "pub", "$SRV.INFO", true},
		{"cli", "pub", "registry.tools.call", false},
		{"cli", "pub", "agent.runs.start", false},
		{"cli", "pub", "registry.servers.add", true},
		{"gateway", "pub", "registry.servers.add", true},
		{"gateway", "pub", "vfs.mcpservers.list", false},
		{"agent", "pub", "vfs.mcpservers.list", false},
		{"registry", "pub", "vfs.mcpservers.list", true},
		{"registry", "pub", "events.registry.changed.acct", true},
		{"cli", "sub", "vfs.>", false},
		{"registry", "pub", "events.audit.recorded", true},
		{"gateway", "pub", "events.audit.recorded", false},
		{"agent", "pub", "events.audit.recorded", false},
		{"vfs", "sub", "events.audit.recorded", true},
		{"gateway", "pub", "vfs.audit.query", true},
		{"cli", "pub", "vfs.audit.query", true},
		{"registry", "pub", "vfs.audit.query", false},
		{"agent", "pub", "vfs.audit.query", false},
		{"cli", "sub", "events.>", false},
	}
	for _, tt := range tests {
		nc := s.Conn(t, tt.id, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		var err error
		if tt.op == "pub" {
			err = nc.Publish(tt.subject, []byte("{}"))
		} else {
			_, err = nc.SubscribeSync(tt.subject)
		}
		if err != nil {
			t.Fatal(err)
		}
		// The server answers the flush's PING after any -ERR for the
		// operation, so the violation is known when Flush returns.
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		denied := nc.LastError() != nil && strings.Contains(nc.LastError().Error(), "ermissions")
		if denied == tt.ok {
			t.Errorf("%s %s %s: allowed=%v, want %v (last error %v)", tt.id, tt.op, tt.subject, !denied, tt.ok, nc.LastError())
		}
		nc.Close()
	}
}

// Replies travel through allow_responses: a real micro service as vfs
// answers the gateway and the cli, and the cli's $SRV discovery (what
// `nats micro ls` sends) reaches it.
func TestIdentityReplies(t *testing.T) {
	s := servicetest.SecureNATS(t)
	vfs := s.Conn(t, "vfs")
	ws, err := wire.NewService(vfs, wire.ServiceOptions{Name: "vfs", Version: "1.0.0", Log: servicetest.Logger(t)})
	must(t, err)
	t.Cleanup(func() { _ = ws.Stop(context.Background()) })
	for _, id := range []string{"gateway", "cli"} {
		got, err := wire.SysPing("vfs").Call(context.Background(), s.Client(t, id), &wire.Empty{})
		if err != nil || got.Service != "vfs" {
			t.Errorf("%s pinging vfs: %+v %v", id, got, err)
		}
	}
	cli := s.Conn(t, "cli")
	for _, subj := range []string{"$SRV.PING", "$SRV.INFO.vfs"} {
		m, err := cli.Request(subj, nil, 5*time.Second)
		if err != nil || !strings.Contains(string(m.Data), `"name":"vfs"`) {
			t.Errorf("cli asking %s: %v %v", subj, m, err)
		}
	}
}

// deploy/nats/auth.conf is the table rendered, and nats-server reads it
// (with the public keys from the environment) into the same users and
// permissions as the embedded server gets.
func TestDeployConfigMatchesTable(t *testing.T) {
	const deploy = "../../deploy/nats"
	got, err := os.ReadFile(filepath.Join(deploy, "auth.conf"))
	must(t, err)
	if string(got) != natsx.ServerConfig() {
		t.Fatalf("deploy/nats/auth.conf is stale: regenerate it with `mirobody nats-creds --output server-config > deploy/nats/auth.conf`")
	}
	keys, err := natsx.EnsureSeeds(t.TempDir())
	must(t, err)
	for id, pub := range keys {
		t.Setenv(natsx.UserKeyEnv(id), pub)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(deploy, "nats.conf"))
	must(t, err)
	want, err := natsx.ServerUsers(keys)
	must(t, err)
	if len(opts.Nkeys) != len(want) {
		t.Fatalf("nats.conf has %d nkey users, want %d", len(opts.Nkeys), len(want))
	}
	for i := range want {
		g, _ := json.Marshal(opts.Nkeys[i])
		w, _ := json.Marshal(want[i])
		if string(g) != string(w) {
			t.Errorf("user %d:\n conf  %s\n table %s", i, g, w)
		}
	}
	// Nothing uses JetStream, so the server keeps no state.
	if opts.JetStream || opts.HTTPPort != 8222 {
		t.Errorf("nats.conf must keep monitoring on 8222 and JetStream off: %+v", opts)
	}
}

// EnsureSeeds keeps existing seeds and writes new ones private.
func TestEnsureSeedsKeepsSeeds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "creds")
	first, err := natsx.EnsureSeeds(dir)
	must(t, err)
	second, err := natsx.EnsureSeeds(dir)
	must(t, err)
	for _, id := range natsx.IdentityNames() {
		if first[id] == "" || first[id] != second[id] {
			t.Errorf("%s: %q then %q", id, first[id], second[id])
		}
		fi, err := os.Stat(natsx.SeedFile(dir, id))
		must(t, err)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s seed mode %v, want 0600", id, fi.Mode().Perm())
		}
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v, want 0700", fi.Mode().Perm())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Heartbeats pass the permissions: a vfs handler that runs for many
// liveness windows of a gateway caller is answered, not counted as lost
// (a heartbeat the broker refused would look exactly like a dead replica).
func TestHeartbeatsPassPermissions(t *testing.T) {
	s := servicetest.SecureNATS(t)
	svc, err := wire.NewService(s.Conn(t, natsx.IdentityVFS), wire.ServiceOptions{Name: "vfs", Version: "0.1.0", Log: servicetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	slow := wire.Endpoint[wire.Empty, wire.Empty]{Subject: "vfs.test.slow"}
	window := 500 * time.Millisecond
	if err := wire.Serve(svc, slow, func(ctx context.Context, _ *wire.Empty) (*wire.Empty, error) {
		select {
		case <-time.After(3 * window):
			return &wire.Empty{}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{natsx.IdentityGateway, natsx.IdentityCLI} {
		c := wire.NewClient(wire.ClientOptions{Conn: s.Conn(t, id), Liveness: window})
		if _, err := slow.Call(context.Background(), c, &wire.Empty{}); err != nil {
			t.Errorf("%s: %v, want an answer after the heartbeats", id, err)
		}
	}
}
