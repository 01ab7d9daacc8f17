package registry

import (
	"context"
	"testing"
	"time"
)

func TestToolDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name    string
		caller  time.Duration // 0: no caller deadline
		timeout time.Duration
		want    time.Duration
	}{
		{"no caller deadline", 0, 60 * time.Second, 60 * time.Second},
		{"caller sent the tool's deadline plus the margin", CallTimeout(60 * time.Second), 60 * time.Second, 60 * time.Second},
		{"caller's deadline first: the margin is kept", 10 * time.Second, 60 * time.Second, 10*time.Second - ReplyMargin},
		{"tool's own timeout first", 120 * time.Second, 5 * time.Second, 5 * time.Second},
		{"caller deadline too close for the margin", ReplyMargin, 60 * time.Second, ReplyMargin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.caller > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, now.Add(tt.caller))
				defer cancel()
			}
			if got := ToolDeadline(ctx, now, tt.timeout); !got.Equal(now.Add(tt.want)) {
				t.Errorf("ToolDeadline = now+%s, want now+%s", got.Sub(now), tt.want)
			}
		})
	}
}
