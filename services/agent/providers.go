package agent

import "github.com/mirobody/mirobody-go/services/wire"

// ProvidersList lists the agents and the model providers each can run a
// turn on, for a client's model picker. It names no key.
var ProvidersList = wire.Endpoint[ProvidersRequest, ProvidersResponse]{Subject: "agent.providers.list"}

// ProvidersRequest asks for the agents and their providers.
type ProvidersRequest struct{}

// ProvidersResponse is every agent, in a fixed order (deep, base).
type ProvidersResponse struct {
	Agents []AgentInfo `json:"agents"`
}

// AgentInfo is one agent and its providers. Default marks the agent a
// turn that names none runs on (DEFAULT_AGENT).
type AgentInfo struct {
	Name      Name           `json:"name"`
	Default   bool           `json:"default,omitempty"`
	Providers []ProviderInfo `json:"providers"`
}

// ProviderInfo is one configured provider of an agent: its name (a
// turn's provider), wire type and model (a turn's model defaults to it).
// Default marks the one a turn that names no provider uses; Ready is
// false when its API key is not set, so turns that pick it fail.
type ProviderInfo struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Model   string   `json:"model"`
	Models  []string `json:"models"`
	Default bool     `json:"default,omitempty"`
	Ready   bool     `json:"ready"`
}
