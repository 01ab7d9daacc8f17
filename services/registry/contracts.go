package registry

import "github.com/mirobody/mirobody-go/services/wire"

// Contracts lists every endpoint and event of the package, for the golden
// tests and for the server's check that it serves them all.
func Contracts() []wire.Contract {
	return []wire.Contract{
		ToolsList, ToolsCall, CallsCancel, Changed, AccountChanged, Progress,
		ServersAdd, ServersList, ServersUpdate, ServersRemove, ServersOAuthCallback, ServersOAuthStart,
		SkillsList, SkillsRead,
		ResourcesList, ResourcesRead, PromptsList, PromptsGet, Complete, ResourcesChanged,
	}
}
