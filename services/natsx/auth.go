package natsx

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Identities: one NATS user per service, plus the operator commands. A
// service's identity is its micro service name.
const (
	IdentityVFS      = "vfs"
	IdentityRegistry = "registry"
	IdentityAgent    = "agent"
	IdentityGateway  = "gateway"
	IdentityCLI      = "cli"
)

// ResponseTTL is how long a responder may take to answer a request it
// received. It outlives every handler deadline (wire.MaxHandlerTimeout,
// TOOL_TIMEOUT_S), and bounds what an unanswered request leaves behind in
// the server.
const ResponseTTL = time.Hour

// Grant is what one identity may do on the broker. Subjects are prefixes
// (`vfs.>`), so new subjects under an existing prefix need no new grant.
type Grant struct {
	// Identity is the NATS user (see the Identity constants).
	Identity string
	// Publish lists the subjects it may publish to: requests and events.
	Publish []string
	// DenyPublish carves exceptions out of Publish.
	DenyPublish []string
	// Subscribe lists the subjects it may subscribe to.
	Subscribe []string
	// Respond lets it answer, once, each request it received.
	Respond bool
}

// LivePrefix is the prefix of an identity's heartbeat subjects (wire's
// liveness): its inbox prefix with wire.LivePrefix in place of _INBOX, and
// like the inbox only that identity may subscribe under it.
func LivePrefix(identity string) string { return wire.LivePrefix + "." + identity }

// InboxPrefix is the reply inbox prefix of an identity's connections; only
// that identity may subscribe under it, so nobody else reads its replies.
func InboxPrefix(identity string) string { return "_INBOX." + identity }

// Grants returns the permission table: the single source of truth for the
// embedded servers (dev, tests) and deploy/nats/auth.conf.
func Grants() []Grant {
	// The vfs groups that mint or reveal identities (accounts, API keys,
	// OAuth codes and tokens): only the gateway and the operator may call them.
	identityGroups := []string{"vfs.accounts.>", "vfs.keys.>", "vfs.oauth.>"}
	// The external MCP server store hands out decrypted credentials: only
	// registry-svc (which connects to the servers) and the operator may
	// call it; the CLI manages servers through registry.servers.
	serverStore := "vfs.mcpservers.>"
	// The audit log is read by the gateway (one account's) and the
	// operator (every account's); only registry-svc, which runs the tool
	// calls, records them.
	auditQuery, auditEvents := "vfs.audit.>", "events.audit.>"
	return []Grant{
		service(IdentityVFS, []string{"events.vfs.>", "events.data.>", "events.keys.>"}, nil),
		service(IdentityRegistry, []string{"vfs.>", "events.registry.>", auditEvents, wire.StreamPrefix + ".>"}, append(slices.Clone(identityGroups), auditQuery)),
		service(IdentityAgent, []string{"vfs.>", "registry.>", "events.agent.>", wire.StreamPrefix + ".>"}, append(slices.Clone(identityGroups), serverStore, auditQuery)),
		service(IdentityGateway, []string{"vfs.>", "registry.>", "agent.>", "events.gateway.>", "events.agent.session_deleted"}, []string{serverStore},
			wire.StreamPrefix+".>"),
		{Identity: IdentityCLI, Publish: []string{"vfs.>", "registry.servers.>", "*.sys.>", "$SRV.>"}, Subscribe: []string{InboxPrefix(IdentityCLI) + ".>", LivePrefix(IdentityCLI) + ".>"}},
	}
}

// service is the grant of a micro service: it answers its own subjects and
// the $SRV discovery requests naming it, beats while it handles a request
// (heartbeats carry no data: a forged one only keeps a caller waiting until
// its deadline, as before liveness), reads every event (events carry ids,
// never secrets), its own replies and its own heartbeats.
func service(name string, publish, deny []string, subscribe ...string) Grant {
	sub := append([]string{name + ".>", "$SRV.*", "$SRV.*." + name, "$SRV.*." + name + ".>", "events.>", InboxPrefix(name) + ".>", LivePrefix(name) + ".>"}, subscribe...)
	publish = append(slices.Clone(publish), wire.LivePrefix+".>")
	return Grant{Identity: name, Publish: publish, DenyPublish: deny, Subscribe: sub, Respond: true}
}

// IdentityNames returns every identity in the table.
func IdentityNames() []string {
	var out []string
	for _, g := range Grants() {
		out = append(out, g.Identity)
	}
	return out
}

// Permissions returns g as nats-server permissions.
func (g Grant) Permissions() *server.Permissions {
	p := &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: slices.Clone(g.Publish), Deny: slices.Clone(g.DenyPublish)},
		Subscribe: &server.SubjectPermission{Allow: slices.Clone(g.Subscribe)},
	}
	if g.Respond {
		p.Response = &server.ResponsePermission{MaxMsgs: 1, Expires: ResponseTTL}
	}
	return p
}

// ServerUsers returns the nkey users of an embedded server: every identity
// of the table, keyed by its public key in keys (identity → public key).
func ServerUsers(keys map[string]string) ([]*server.NkeyUser, error) {
	var users []*server.NkeyUser
	for _, g := range Grants() {
		pub, ok := keys[g.Identity]
		if !ok {
			return nil, fmt.Errorf("no NATS public key for identity %s", g.Identity)
		}
		users = append(users, &server.NkeyUser{Nkey: pub, Permissions: g.Permissions()})
	}
	return users, nil
}

// UserKeyEnv names the environment variable that gives the NATS server an
// identity's public key (deploy/nats/auth.conf reads it).
func UserKeyEnv(identity string) string { return "NATS_USER_" + strings.ToUpper(identity) }

// SeedEnv names the variable that holds an identity's seed in compose's
// .env file (compose turns it into a secret file).
func SeedEnv(identity string) string { return "NATS_NKEY_" + strings.ToUpper(identity) }

// ServerConfig renders the table as a nats-server authorization block; each
// user's public key comes from the environment variable UserKeyEnv.
func ServerConfig() string {
	var b strings.Builder
	b.WriteString("# Generated from services/natsx (Grants) by `mirobody nats-creds --output server-config`; do not edit.\n")
	b.WriteString("# Each identity's public nkey comes from the environment (`mirobody nats-creds` prints them).\n")
	b.WriteString("authorization {\n  users = [\n")
	for _, g := range Grants() {
		fmt.Fprintf(&b, "    # %s\n    {\n      nkey: $%s\n      permissions: {\n", g.Identity, UserKeyEnv(g.Identity))
		fmt.Fprintf(&b, "        publish: {allow: %s", list(g.Publish))
		if len(g.DenyPublish) > 0 {
			fmt.Fprintf(&b, ", deny: %s", list(g.DenyPublish))
		}
		fmt.Fprintf(&b, "}\n        subscribe: {allow: %s}\n", list(g.Subscribe))
		if g.Respond {
			fmt.Fprintf(&b, "        allow_responses: {max: 1, expires: %q}\n", ResponseTTL.String())
		}
		b.WriteString("      }\n    }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

func list(subjects []string) string {
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
