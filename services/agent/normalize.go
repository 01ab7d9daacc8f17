package agent

import (
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
