package turn

import (
	"context"
	"errors"
	"log/slog"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/services/agent"
)

// Failure turns the error that ended a turn into the message of its error
// event and its finish reason. The message names the kind of error, never
// internal details; an empty message means no error event (a cancelled
// turn).
func Failure(ctx context.Context, err error, log *slog.Logger) (message, finish string) {
	var le *llm.Error
	switch {
	case errors.Is(err, context.Canceled) || (ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled)):
		return "", agent.FinishCancelled
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "the turn ran out of time (TURN_TIMEOUT_S)", agent.FinishError
	case errors.As(err, &le):
		log.Warn("model call failed", "err", err)
		switch le.Kind {
		case "rate_limited":
			return "the model provider is rate limiting requests; try again later", agent.FinishUnavailable
		case "auth":
			return "the model provider rejected the API key", agent.FinishError
		case "bad_request":
			return "the model provider rejected the request", agent.FinishError
		case llm.KindMCPUnreachable:
			return "the model provider could not reach Mirobody's MCP endpoint: MCP_PUBLIC_URL must be a public URL the provider can reach", agent.FinishError
		}
		return "the model provider is unavailable", agent.FinishUnavailable
	}
	log.Error("turn failed", "err", err)
	return "internal error", agent.FinishError
}
