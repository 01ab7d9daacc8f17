package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/natsx"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// The chaos run's processes are this test binary run again: chaosRole names
// what it becomes (chaosHelper), chaosArg its argument.
const (
	chaosRole = "MIROBODY_CHAOS_ROLE"
	chaosArg  = "MIROBODY_CHAOS_ARG"
)

// chaosHelper turns this process into a chaos-run process when chaosRole is
// set, and never returns then: a NATS node (chaosArg: its config file),
// or `mirobody serve --target=<chaosArg>`.
func chaosHelper() {
	switch os.Getenv(chaosRole) {
	case "":
		return
	case "nats":
		opts, err := server.ProcessConfigFile(os.Getenv(chaosArg))
		if err != nil {
			fmt.Fprintln(os.Stderr, "nats config:", err)
			os.Exit(2)
		}
		ns, err := server.NewServer(opts)
		if err != nil {
			fmt.Fprintln(os.Stderr, "nats:", err)
			os.Exit(2)
		}
		ns.ConfigureLogger()
		ns.Start()
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		ns.Shutdown()
		os.Exit(0)
	case "serve":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		code := Main(ctx, []string{"serve", "--target=" + os.Getenv(chaosArg), "--config", "testdata/empty.yaml"}, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	fmt.Fprintln(os.Stderr, "unknown", chaosRole)
	os.Exit(2)
}

// chaosProc is one OS process of the split topology.
type chaosProc struct {
	name  string
	env   []string
	ready func() bool // the process serves
	log   string      // its stdout and stderr
	cmd   *exec.Cmd
	// exited is closed when the process started last has exited.
	exited chan struct{}
}

// start starts the process in its own process group (a kill takes its
// Python tool hosts too, as a container's death does) and waits until it
// is ready.
func (p *chaosProc) start(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	must(t, err)
	defer f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, cmd.Start())
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(time.Minute)
	for !p.ready() {
		select {
		case <-exited:
			t.Fatalf("%s exited while starting:\n%s", p.name, tail(p.log))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within a minute:\n%s", p.name, tail(p.log))
		}
	}
}

// kill sends SIGKILL to the process and its children.
func (p *chaosProc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killAll kills procs and waits until they have exited, so that nothing
// writes into the test's folders or holds the database while they go.
func killAll(procs []*chaosProc) {
	for _, p := range procs {
		p.kill()
	}
	for _, p := range procs {
		if p.exited != nil {
			select {
			case <-p.exited:
			case <-time.After(10 * time.Second):
			}
		}
	}
}

// tail returns the end of a log file, for a failure message.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	return string(b[max(0, len(b)-4000):])
}

// chaosTopology is the split deployment: a NATS cluster, Postgres, and
// every service in its own process, two replicas of the stateless ones.
type chaosTopology struct {
	nats     []*chaosProc
	procs    map[string]*chaosProc // by name: vfs, registry-1, agent-2, gateway-1, ...
	gateways []string              // base URLs
	key      string                // an API key of the load's account
}

// startChaosTopology starts NATS (nodes), vfs-svc, then two replicas each of
// registry-svc, agent-svc and the gateway, with NATS auth on as
// `mirobody nats-creds` and deploy/nats set it up.
func startChaosTopology(t *testing.T, nodes int) *chaosTopology {
	t.Helper()
	dir := t.TempDir()
	if *chaosLogs != "" {
		dir = *chaosLogs
		must(t, os.MkdirAll(dir, 0o700))
	}
	creds := filepath.Join(dir, "nats-creds")
	keys, err := natsx.EnsureSeeds(creds)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "auth.conf"), []byte(natsx.ServerConfig()), 0o600))
	var userEnv []string
	for id, k := range keys {
		userEnv = append(userEnv, natsx.UserKeyEnv(id)+"="+k)
	}
	top := &chaosTopology{procs: map[string]*chaosProc{}}
	t.Cleanup(func() { killAll(top.nats) })

	client, cluster := make([]string, nodes), make([]string, nodes)
	for i := range nodes {
		client[i], cluster[i] = servicetest.FreeAddr(t), servicetest.FreeAddr(t)
	}
	for i := range nodes {
		var routes []string
		for j := range nodes {
			if j != i {
				routes = append(routes, `"nats-route://`+cluster[j]+`"`)
			}
		}
		cfgPath := filepath.Join(dir, fmt.Sprintf("nats-%d.conf", i+1))
		must(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(`server_name: n%d
listen: %s
max_payload: 8MB
cluster { name: chaos, listen: %s, routes: [%s] }
include ./auth.conf
`, i+1, client[i], cluster[i], strings.Join(routes, ", "))), 0o600))
		addr := client[i]
		p := &chaosProc{name: fmt.Sprintf("nats-%d", i+1), log: filepath.Join(dir, fmt.Sprintf("nats-%d.log", i+1)),
			env:   append([]string{chaosRole + "=nats", chaosArg + "=" + cfgPath}, userEnv...),
			ready: func() bool { return natsUp(creds, "nats://"+addr) }}
		top.nats = append(top.nats, p)
	}
	for _, p := range top.nats {
		p.start(t)
	}

	db := servicetest.Postgres(t, nil)
	// Cleanups run last first: the services go before their database.
	t.Cleanup(func() { killAll(mapValues(top.procs)) })
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	tools, err := filepath.Abs("testdata/chaos-tools")
	must(t, err)
	common := []string{
		"NATS_CREDS_DIR=" + creds, "DATABASE_URL=" + db.DSN, "SECRET_KEY=" + hex.EncodeToString(secret),
		"PROVIDER=scripted", "MCP_TOOL_DIRS=" + tools + ",builtin", "SKILL_DIRS=" + t.TempDir(),
		"TOOLS_WATCH=false", "TOOL_SANDBOX=off", "LOG_FORMAT=text", "LOG_LEVEL=warn",
		"RATE_LIMIT_ACCOUNT=0", "RATE_LIMIT_IP=0", "MAX_CONNS_PER_IP=0",
		// A turn whose agent replica died is reported lost after three
		// missed run heartbeats: 1.5 s, inside the run's 3 s bound.
		"AGENT_HEARTBEAT_MS=500",
		fmt.Sprintf("LIVENESS_MS=%d", chaosLiveness.Milliseconds()),
	}
	// vfs-svc (one replica) on the first node, replica i of the others on
	// node i (mod nodes): the NATS node the run kills, the second, holds one
	// replica of each, and the other replica sits elsewhere.
	add := func(name, target string, node int, extra ...string) {
		admin := servicetest.FreeAddr(t)
		env := append([]string{chaosRole + "=serve", chaosArg + "=" + target,
			"NATS_URL=nats://" + client[node%nodes], "ADMIN_ADDR=" + admin}, common...)
		top.procs[name] = &chaosProc{name: name, log: filepath.Join(dir, name+".log"), env: append(env, extra...),
			ready: func() bool { return httpOK("http://" + admin + "/readyz") }}
	}
	add("vfs", "vfs-svc", 0)
	for i := 1; i <= 2; i++ {
		add(fmt.Sprintf("registry-%d", i), "registry-svc", i)
		add(fmt.Sprintf("agent-%d", i), "agent-svc", i)
		addr := servicetest.FreeAddr(t)
		add(fmt.Sprintf("gateway-%d", i), "gateway", i, "HTTP_ADDR="+addr, "MCP_PUBLIC_URL=http://"+addr)
		top.gateways = append(top.gateways, "http://"+addr)
	}
	for _, name := range []string{"vfs", "registry-1", "registry-2", "agent-1", "agent-2", "gateway-1", "gateway-2"} {
		top.procs[name].start(t)
	}

	nc, err := nats.Connect("nats://"+client[0], natsCreds(t, creds, "cli")...)
	must(t, err)
	defer nc.Close()
	accts := accounts.NewAccounts(wire.NewClient(wire.ClientOptions{Conn: nc}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := accts.Create(ctx, &accounts.AccountCreateRequest{Email: "chaos@example.com"})
	must(t, err)
	k, err := accts.CreateKey(ctx, &accounts.KeyCreateRequest{AccountID: a.ID, Name: "chaos"})
	must(t, err)
	top.key = k.Key
	return top
}

// natsCreds are the connect options of identity with the seeds in dir.
func natsCreds(t *testing.T, dir, identity string) []nats.Option {
	t.Helper()
	nk, err := nats.NkeyOptionFromSeed(natsx.SeedFile(dir, identity))
	must(t, err)
	return []nats.Option{nk, nats.CustomInboxPrefix(natsx.InboxPrefix(identity))}
}

// natsUp reports whether the NATS node at url admits the cli identity.
func natsUp(creds, url string) bool {
	nk, err := nats.NkeyOptionFromSeed(natsx.SeedFile(creds, "cli"))
	if err != nil {
		return false
	}
	nc, err := nats.Connect(url, nk, nats.Timeout(time.Second))
	if err != nil {
		return false
	}
	nc.Close()
	return true
}

// httpOK reports whether GET url answers 200.
func httpOK(url string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func mapValues(m map[string]*chaosProc) []*chaosProc {
	out := make([]*chaosProc, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	return out
}
