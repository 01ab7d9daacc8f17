package registrysvc

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	nooptrace "go.opentelemetry.io/otel/trace/noop"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/ssrf"
	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Lifetimes of the external server caches.
const (
	// configTTL bounds how long an account's server list is trusted
	// without an event (a lost event heals by then).
	configTTL = 5 * time.Minute
	// failedConfigTTL is how long a failed read of it is remembered.
	failedConfigTTL = 5 * time.Second
	// turnIdle closes the session of a chat turn's server.
	turnIdle = 5 * time.Minute
	// storedIdle closes the session of a stored server nobody used.
	storedIdle = 30 * time.Minute
	// defaultRefresh is how often open stored servers are listed again,
	// which is their health check.
	defaultRefresh = 30 * time.Second
)

// external connects registry-svc to the accounts' external MCP servers
// (registry-svc/design.md "External MCP servers"): their configuration comes
// from vfs-svc, cached per account until events.registry.changed.<account>; the
// sessions are cached per (account, server).
type external struct {
	log       *slog.Logger
	guard     *ssrf.Guard
	store     *mcpservers.MCPServers
	pub       *wire.Client
	transport http.RoundTripper
	refresh   time.Duration
	maxBytes  int // EXTERNAL_MAX_RESULT_BYTES
	maxTools  int // EXTERNAL_MAX_TOOLS
	announcer *coalescer
	tracer    trace.Tracer

	// configs is each account's configuration; a read in flight when a
	// change comes does not store it (genCache).
	configs *genCache[*accountConfig]
	mu      sync.Mutex
	conns   map[connKey]*extConn

	stop chan struct{}
	done chan struct{}
}

// accountConfig is an account's enabled servers, with their credentials.
type accountConfig struct {
	specs  []serverSpec
	loaded time.Time
	// stored is the number of servers the account has stored, in any
	// state; failed marks a read that failed (and listed none).
	stored int
	failed bool
}

// connKey names a cached session: a stored server by its name, a chat
// turn's server by its spec too (two turns may use one name differently).
type connKey struct {
	account, name, turn string
}

// externalOptions configures external.
type externalOptions struct {
	Log   *slog.Logger
	Guard *ssrf.Guard
	Store *mcpservers.MCPServers
	Pub   *wire.Client
	// Refresh is how often open stored servers are listed again; zero
	// means defaultRefresh.
	Refresh time.Duration
	// MaxBytes caps every message read from a server and the tools one
	// server lists (EXTERNAL_MAX_RESULT_BYTES).
	MaxBytes int
	// MaxTools caps the tools one server lists (EXTERNAL_MAX_TOOLS).
	MaxTools int
	// Window is the shortest time between two announcements of one
	// account's change; zero means listChangedWindow.
	Window time.Duration
	// Tracer records each tool call as a client span; nil records none.
	Tracer trace.Tracer
}

func newExternal(opts externalOptions) *external {
	refresh := cmp.Or(opts.Refresh, defaultRefresh)
	x := &external{log: opts.Log, guard: opts.Guard, store: opts.Store, pub: opts.Pub, refresh: refresh,
		transport: &cappedTransport{base: guardedTransport(opts.Guard), max: opts.MaxBytes, log: opts.Log},
		maxBytes:  opts.MaxBytes, maxTools: opts.MaxTools, tracer: opts.Tracer,
		configs: newGenCache[*accountConfig](), conns: map[connKey]*extConn{}, stop: make(chan struct{}), done: make(chan struct{})}
	if x.tracer == nil {
		x.tracer = nooptrace.NewTracerProvider().Tracer("")
	}
	x.announcer = newCoalescer(cmp.Or(opts.Window, listChangedWindow), x.publish)
	go x.loop()
	return x
}

// extSet is the external tools of one caller, sorted by name.
type extSet struct {
	tools []*extTool
	// fingerprint identifies the set, for the list's ETag.
	fingerprint string
}

// toolsFor returns the tools of the account's enabled servers and of the
// turn's servers, each server listed in parallel with its own timeout: a
// server that fails is left out (and backs off), the others remain.
func (x *external) toolsFor(ctx context.Context, account string, turn []agent.ServerSpec) extSet {
	specs := x.config(ctx, account)
	conns := make([]*extConn, 0, len(specs)+len(turn))
	taken := map[string]bool{}
	for _, t := range turn {
		if !registry.ServerNamePattern.MatchString(t.Name) || taken[t.Name] {
			x.log.WarnContext(ctx, "a chat turn's MCP server has an invalid or repeated name; it is skipped", "server", t.Name)
			continue
		}
		spec := newSpec(t.Name, t.URL, t.AccessToken, nil)
		key := connKey{account, t.Name, spec.fingerprint}
		if !x.cached(key) {
			// Checked once per session; every dial is checked again.
			if _, err := x.guard.CheckURL(ctx, t.URL); err != nil {
				x.log.WarnContext(ctx, "a chat turn's MCP server is refused", "server", t.Name, "err", err)
				continue
			}
		}
		taken[t.Name] = true
		conns = append(conns, x.conn(key, spec, true))
	}
	for _, s := range specs {
		if !taken[s.name] { // a turn's server of the same name wins
			conns = append(conns, x.conn(connKey{account: account, name: s.name}, s, false))
		}
	}
	if len(conns) == 0 {
		return extSet{}
	}
	sums := make([]string, len(conns))
	lists := make([][]*extTool, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			tools, sum, err := c.load(ctx, false)
			if err == nil {
				lists[i], sums[i] = tools, c.spec.name+"="+sum
			}
		})
	}
	wg.Wait()
	var out extSet
	h := sha256.New()
	for i := range conns {
		out.tools = append(out.tools, lists[i]...)
		h.Write([]byte(sums[i] + "\x00"))
	}
	sort.Slice(out.tools, func(i, j int) bool { return out.tools[i].tool.Name < out.tools[j].tool.Name })
	out.fingerprint = hex.EncodeToString(h.Sum(nil))[:16]
	return out
}

// serverless reports whether the account is known to have no stored
// server at all: its tool list then changes only when it adds one, which
// announces it (AccountChanged). A failed or forgotten read says no.
func (x *external) serverless(account string) bool {
	cfg, _, _ := x.configs.get(account)
	return cfg != nil && !cfg.failed && cfg.stored == 0
}

// config returns the account's enabled servers, from the cache or from
// vfs-svc. A failed read lists none (and is logged): the registry's own
// tools still answer. A read that a change overtook is not kept, nor
// closes any session: its caller gets the list a newer read stored, else
// this one (the next lookup reads again).
func (x *external) config(ctx context.Context, account string) []serverSpec {
	cfg, gen, _ := x.configs.get(account)
	if cfg != nil && time.Since(cfg.loaded) < configTTL {
		return cfg.specs
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := x.store.List(ctx, &mcpservers.MCPServerListRequest{AccountID: account, WithSecrets: true})
	if err != nil {
		x.log.WarnContext(ctx, "reading the account's MCP servers failed; their tools are left out", "account", account, "err", err)
		// Remembered briefly, so that a vfs-svc outage does not cost every
		// list a round trip.
		x.configs.put(account, gen, &accountConfig{loaded: time.Now().Add(failedConfigTTL - configTTL), failed: true})
		return nil
	}
	cfg = &accountConfig{loaded: time.Now(), stored: len(resp.Servers)}
	for _, m := range resp.Servers {
		if !m.Enabled {
			continue
		}
		if m.Unreadable {
			x.log.WarnContext(ctx, "an MCP server's credentials cannot be decrypted; its tools are left out", "account", account, "server", m.Name)
			continue
		}
		if m.Auth == registry.AuthOAuth {
			if m.Secrets != nil && m.Secrets.OAuth != nil {
				cfg.specs = append(cfg.specs, oauthSpec(m.Name, m.URL, m.Secrets.OAuth))
			}
			continue
		}
		var token string
		var headers map[string]string
		if m.Secrets != nil {
			token, headers = m.Secrets.AccessToken, m.Secrets.Headers
		}
		cfg.specs = append(cfg.specs, newSpec(m.Name, m.URL, token, headers))
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.configs.put(account, gen, cfg) {
		// Serving the newer list also keeps this caller from opening a
		// session for a server that was just removed.
		if newer, _, ok := x.configs.get(account); ok {
			return newer.specs
		}
		return cfg.specs
	}
	// Sessions of servers removed, disabled or changed are closed.
	keep := map[string]string{}
	for _, s := range cfg.specs {
		keep[s.name] = s.fingerprint
	}
	for k, c := range x.conns {
		if k.account == account && k.turn == "" && keep[k.name] != c.spec.fingerprint {
			delete(x.conns, k)
			go c.close()
		}
	}
	return cfg.specs
}

// cached reports whether a session for key exists.
func (x *external) cached(key connKey) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.conns[key] != nil
}

// conn returns the cached session for key, creating it.
func (x *external) conn(key connKey, spec serverSpec, turn bool) *extConn {
	x.mu.Lock()
	defer x.mu.Unlock()
	if c := x.conns[key]; c != nil && c.spec.fingerprint == spec.fingerprint {
		return c
	} else if c != nil {
		go c.close()
	}
	c := &extConn{x: x, account: key.account, spec: spec, turn: turn}
	c.touch()
	x.conns[key] = c
	return c
}

// health returns what this replica knows of a stored server.
func (x *external) health(account, name string) registry.Health {
	x.mu.Lock()
	c := x.conns[connKey{account: account, name: name}]
	x.mu.Unlock()
	if c == nil {
		return registry.Health{Status: registry.HealthUnknown}
	}
	return c.snapshotHealth()
}

// changed announces that c's account has a different tool list because
// of its server (a list_changed, a server down or back). This replica
// forgets its cached state at once; the event goes out at most once per
// window, since a server can send thousands of list_changed and each
// event reaches every MCP session of the account (issue 15). A chat
// turn's server concerns that turn only, so it announces nothing.
func (x *external) changed(c *extConn) {
	if c.turn {
		return
	}
	x.invalidate(c.account)
	x.announcer.add(c.account)
}

// announce invalidates account here, then tells the other replicas and the
// gateways (whose sessions of that account get list_changed) at once: the
// user changed the servers and lists next.
func (x *external) announce(account string) {
	x.invalidate(account)
	x.publish(account)
}

// publish sends the event announcing a change of account's tools.
func (x *external) publish(account string) {
	if err := registry.AccountChanged.For(account).Publish(context.Background(), x.pub, &registry.ChangedEvent{}); err != nil {
		x.log.Warn("publishing an account's tool change failed", "account", account, "err", err)
	}
}

// invalidate forgets the account's configuration and marks its servers'
// tools for listing again.
func (x *external) invalidate(account string) {
	x.configs.invalidate(account)
	x.mu.Lock()
	defer x.mu.Unlock()
	for k, c := range x.conns {
		if k.account == account {
			c.stale.Store(true)
		}
	}
}

// loop closes idle sessions and lists the open stored servers again, which
// notices a server going down (or back up) and changes it did not announce.
func (x *external) loop() {
	defer close(x.done)
	t := time.NewTicker(x.refresh)
	defer t.Stop()
	for {
		select {
		case <-x.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		var check []*extConn
		x.mu.Lock()
		for k, c := range x.conns {
			idle := now.Sub(time.Unix(0, c.lastUsed.Load()))
			if c.turn && idle > turnIdle || !c.turn && idle > storedIdle {
				delete(x.conns, k)
				go c.close()
				continue
			}
			if !c.turn {
				check = append(check, c)
			}
		}
		x.mu.Unlock()
		var wg sync.WaitGroup
		for _, c := range check {
			c.mu.Lock()
			due := c.health.Status != "" && !now.Before(c.retryAt)
			c.mu.Unlock()
			if due {
				wg.Go(func() { _, _, _ = c.load(context.Background(), true) })
			}
		}
		wg.Wait()
	}
}

// close stops the loop and ends every session.
func (x *external) close() {
	close(x.stop)
	<-x.done
	x.announcer.close()
	x.mu.Lock()
	conns := x.conns
	x.conns = map[connKey]*extConn{}
	x.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}
