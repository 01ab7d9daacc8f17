package agent

import (
	"fmt"
	"strings"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Name names an agent runtime. It picks who runs a chat turn and, in the
// registry contract (registry.Caller), whose tool visibility lists apply
// (ALLOWED_TOOLS_{NAME}; configuration keys spell the name upper case, the
// value itself is always lower case). An agent's access token carries it as
// its agent claim.
type Name string

// The agents; AgentNone is a caller that is none of them.
const (
	// AgentNone is no agent: a plain MCP client, whom no agent's lists
	// restrict.
	AgentNone Name = ""
	// AgentDeep runs the tool loop itself.
	AgentDeep Name = "deep"
	// AgentBase hands our /mcp to the LLM provider, which runs the loop.
	AgentBase Name = "base"
)

// Valid reports whether n is an agent, in its one spelling.
func (n Name) Valid() bool { return n == AgentDeep || n == AgentBase }

// Normalize maps the accepted spellings of a turn's agent (agent-svc/design.md "Chat turns": any
// case, upstream's "Baseline" too) to AgentDeep or AgentBase; empty means
// def (DEFAULT_AGENT). The gateway and agent-svc both decide by it.
func Normalize(a, def string) (Name, error) {
	switch strings.ToLower(strings.TrimSpace(a)) {
	case "":
		return Normalize(def, string(AgentDeep))
	case "deep":
		return AgentDeep, nil
	case "base", "baseline":
		return AgentBase, nil
	}
	return "", wire.Errorf(wire.InvalidArgument, "agent must be deep or base, not %q", a)
}

// DeepOwnTools are the Deep agent's own tools, beside the registry's:
// ALLOWED_TOOLS_DEEP and DISALLOWED_TOOLS_DEEP apply to them too, and the
// registry knows them so that it does not call them unknown names.
var DeepOwnTools = []string{"write_todos", "ls", "read_file", "write_file", "edit_file", "glob", "grep", "task", "js_eval"}

// OrDefault is Normalize with upstream Mirobody's fallback: a name that is
// not one of ours (upstream's Mix, RTC, ...) runs def's agent instead, and
// notice says so, for the turn's notice event; notice is "" otherwise.
func OrDefault(a, def string) (kind Name, notice string) {
	kind, err := Normalize(a, def)
	if err == nil {
		return kind, ""
	}
	if kind, err = Normalize("", def); err != nil {
		kind = AgentDeep
	}
	return kind, fmt.Sprintf("agent %q is not available here; the %s agent answers instead", a, kind)
}
