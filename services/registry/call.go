package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Call runs a tool. Tool failures are a CallResponse with IsError; an error
// return means the call could not be made (invalid arguments, not found,
// unauthenticated, unavailable...).
//
// When the replica running the call goes away mid-call (wire.IsLost), the
// decision is made here, for every caller (the gateway's /mcp and
// agent-svc): a tool annotated readOnlyHint or idempotentHint is called
// again, on another replica, within ctx's deadline; any other tool's call
// is answered with a tool error saying it may or may not have run, because
// running it twice could do its effect twice.
func (c *Client) Call(ctx context.Context, req *CallRequest) (*CallResponse, error) {
	resp, err := ToolsCall.Call(ctx, c.c, req)
	if !wire.IsLost(err) {
		return resp, err
	}
	if c.repeatable(ctx, req) {
		again := ToolsCall
		again.Idempotent = true
		return again.Call(ctx, c.c, req)
	}
	if req.CallID != "" {
		// The replica may only be cut off from NATS, not dead: tell it to
		// stop, so that the call at least does not run on unseen.
		_ = c.Cancel(context.WithoutCancel(ctx), &CancelEvent{CallID: req.CallID, AccountID: req.Caller.AccountID,
			Reason: "the caller stopped hearing from the replica running the call"})
	}
	return Interrupted(req.Name), nil
}

// repeatable reports whether the tool req calls is annotated read-only or
// idempotent in the caller's list. A tool whose annotations cannot be read
// (the list fails, the tool is gone) counts as not repeatable.
func (c *Client) repeatable(ctx context.Context, req *CallRequest) bool {
	list, err := c.List(ctx, &ListRequest{Caller: req.Caller, Servers: req.Servers})
	if err != nil {
		return false
	}
	i, ok := slices.BinarySearchFunc(list.Tools, req.Name, func(t Tool, name string) int { return strings.Compare(t.Name, name) })
	if !ok {
		return false
	}
	return Repeatable(list.Tools[i].Annotations)
}

// Repeatable reports whether MCP tool annotations say a second call does no
// more than the first: readOnlyHint, or idempotentHint.
func Repeatable(annotations json.RawMessage) bool {
	var hints struct {
		ReadOnly   bool `json:"readOnlyHint"`
		Idempotent bool `json:"idempotentHint"`
	}
	_ = json.Unmarshal(annotations, &hints)
	return hints.ReadOnly || hints.Idempotent
}

// Interrupted is the tool error of a call whose registry replica went away
// mid-call, for a tool that is not safe to run again.
func Interrupted(tool string) *CallResponse {
	text, _ := json.Marshal(map[string]string{"type": "text", "text": fmt.Sprintf(
		"The call of %s was interrupted: the registry replica running it stopped responding, so it may or may not have run. Check its effect before calling it again.", tool)})
	return &CallResponse{Content: []json.RawMessage{text}, IsError: true}
}
