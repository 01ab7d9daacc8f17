package agent

import (
	"fmt"
	"strings"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Normalize maps the accepted spellings of a turn's agent (SPEC §9: any
// case, upstream's "Baseline" too) to AgentDeep or AgentBase; empty means
// def (DEFAULT_AGENT). The gateway and agent-svc both decide by it.
func Normalize(a, def string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(a)) {
	case "":
		return Normalize(def, AgentDeep)
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
func OrDefault(a, def string) (kind, notice string) {
	kind, err := Normalize(a, def)
	if err == nil {
		return kind, ""
	}
	if kind, err = Normalize("", def); err != nil {
		kind = AgentDeep
	}
	return kind, fmt.Sprintf("agent %q is not available here; the %s agent answers instead", a, kind)
}
