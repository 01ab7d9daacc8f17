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
		log.Warn("model call failed", "provider", le.Provider, "status", le.Status, "err", err)
		switch le.Kind {
		case "rate_limited":
			return le.Public() + "; try again later", agent.FinishUnavailable
		case "auth", "bad_request":
			return le.Public(), agent.FinishError
		}
		return le.Public(), agent.FinishUnavailable
	}
	log.Error("turn failed", "err", err)
	return "internal error", agent.FinishError
}
