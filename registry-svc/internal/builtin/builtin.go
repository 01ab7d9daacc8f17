// Package builtin holds the Go built-in tools (registry-svc/design.md "Built-in
// tools"): the tools behind the reserved `builtin` entry of MCP_TOOL_DIRS. Each
// tool is a plain Tool value; All lists them in a fixed order. The registry
// validates arguments against InputSchema, applies visibility and data gating,
// injects user info and maps the returned value exactly as it maps a Python
// tool's result.
package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Tool is one Go built-in tool.
type Tool struct {
	// Name is the tool's unique name (snake_case, as MCP clients see it).
	Name string
	// Description is shown to models and clients: what the tool does and
	// when to use it.
	Description string
	// InputSchema is the JSON Schema (2020-12) object of the arguments. It
	// never mentions user_info, which the registry supplies.
	InputSchema json.RawMessage
	// Annotations are MCP tool annotations (readOnlyHint, ...); nil omits them.
	Annotations json.RawMessage
	// RequiresData is the data kind the tool is gated on (vfs.KindHealth,
	// vfs.KindGenetic) or "" for none (registry-svc/design.md "Data gating").
	// The registry hides the tool from accounts without that data and answers a
	// call with a "no data" result, so Call only runs when data exists (or the
	// probe failed).
	RequiresData string
	// TakesUserInfo makes the registry require an authenticated caller and
	// fill Request.User. Tools that touch user data set it.
	TakesUserInfo bool
	// Call runs the tool. See Request for what it receives and Result for
	// how the returned value is mapped.
	Call func(ctx context.Context, req *Request) (any, error)
}

// UserInfo is the injected caller identity, the same shape Python tools get
// in their user_info parameter (registry-svc/design.md "Calling").
type UserInfo struct {
	Success   bool   `json:"success"`
	UserID    string `json:"user_id"`
	SessionID string `json:"session_id"`
}

// Deps are the service dependencies a built-in may use.
type Deps struct {
	// Client reaches other services over NATS (for example vfs-svc).
	Client *wire.Client
	// Log is the registry's logger.
	Log *slog.Logger
	// SkillDirs are the SKILL_DIRS folders, in order.
	SkillDirs []string
	// skillFolders are the SKILL_DIRS listings read_skill has read.
	skillFolders folderMemo
	// frontmatters are the SKILL.md frontmatters read_skill has read.
	frontmatters frontmatterMemo
}

// Request is one call of a built-in tool.
type Request struct {
	// Args are the call's arguments, already validated against InputSchema
	// (a JSON object, never containing user_info).
	Args json.RawMessage
	// User is the authenticated caller when the tool TakesUserInfo; it is
	// the zero value otherwise.
	User UserInfo
	// Deps are the service's dependencies.
	Deps *Deps
	// Progress reports progress to the caller (MCP notifications/progress).
	// It is never nil; it does nothing when the caller asked for no progress.
	Progress func(ctx context.Context, progress, total float64, message string)
}

// Bind decodes Args into v (a pointer to a struct with json tags). A decoding
// failure is an invalid_argument error naming the problem.
func (r *Request) Bind(v any) error {
	args := r.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return wire.Errorf(wire.InvalidArgument, "invalid arguments: %v", err)
	}
	return nil
}

// Result mapping of Call's return values (the same rules as Python tools,
// registry-svc/design.md "Calling"):
//   - a string becomes one text content;
//   - nil becomes empty content;
//   - a *registry.CallResponse is passed through unchanged (for images,
//     several blocks, or an explicit isError);
//   - any other value is encoded as JSON: the compact text plus
//     structuredContent (a JSON array is wrapped as {"result": [...]});
//   - ToolError (see Failf) becomes isError with its message;
//   - a *wire.Error is returned to the caller as a protocol error (for
//     example invalid_argument becomes JSON-RPC -32602);
//   - any other error becomes isError "<tool> failed: <message>" and is logged.

// ToolError is a failure the model should read (isError: true with Message),
// as opposed to a protocol error.
type ToolError struct{ Message string }

// Error implements error.
func (e *ToolError) Error() string { return e.Message }

// Failf returns a *ToolError with a formatted message.
func Failf(format string, args ...any) error {
	return &ToolError{Message: fmt.Sprintf(format, args...)}
}
