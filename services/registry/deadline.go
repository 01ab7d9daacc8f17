package registry

import (
	"context"
	"time"
)

// ReplyMargin is how much sooner than its caller's deadline registry-svc
// ends a tool call, so that the call's "timed out" result reaches the
// caller before the caller stops waiting. A caller that gives a tool T to
// run sends a deadline of T + ReplyMargin (CallTimeout).
const ReplyMargin = time.Second

// CallTimeout is the request deadline that gives a tool toolTimeout to run.
func CallTimeout(toolTimeout time.Duration) time.Duration { return toolTimeout + ReplyMargin }

// ToolDeadline is when a call received with ctx must end: after timeout (the
// tool's own TOOL_TIMEOUT_S), or ReplyMargin before the caller's deadline
// when that comes first. A caller deadline too close for the margin is
// used as it is.
func ToolDeadline(ctx context.Context, now time.Time, timeout time.Duration) time.Time {
	end := now.Add(timeout)
	caller, ok := ctx.Deadline()
	if !ok {
		return end
	}
	if left := caller.Sub(now); left > 2*ReplyMargin {
		caller = caller.Add(-ReplyMargin)
	}
	if caller.Before(end) {
		return caller
	}
	return end
}
