package conf

import "time"

// ToolTimeout is the deadline of one call of the tool name: its entry in
// TOOL_TIMEOUTS, else TOOL_TIMEOUT_S. The gateway (the deadline of an /mcp
// tools/call) and registry-svc (the deadline the tool runs under) both read
// it, so that the two agree.
func (c *Config) ToolTimeout(name string) time.Duration {
	if s, ok := c.ToolTimeouts[name]; ok {
		return time.Duration(s) * time.Second
	}
	return time.Duration(c.ToolTimeoutS) * time.Second
}

// MaxToolTimeout is the longest ToolTimeout of any tool: how long a call in
// flight may still run.
func (c *Config) MaxToolTimeout() time.Duration {
	longest := c.ToolTimeoutS
	for _, s := range c.ToolTimeouts {
		longest = max(longest, s)
	}
	return time.Duration(longest) * time.Second
}
