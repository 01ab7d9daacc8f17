package vfssvc

import (
	"context"

	"github.com/mirobody/mirobody-go/services/vfs/files"
)

// announceFiles publishes files.Changed for the account files among ls, after
// their change committed (gateway/design.md "Subscriptions"). It is best
// effort: the change is durable, and a lost event only delays an MCP
// client's re-read until it reads again.
func (s *Service) announceFiles(ctx context.Context, ls ...loc) {
	ev := &files.ChangedEvent{}
	account := ""
	for _, l := range ls {
		if l.kind == locAccount {
			ev.Paths, account = append(ev.Paths, l.path), l.account
		}
	}
	if len(ev.Paths) == 0 || s.node == nil {
		return
	}
	if err := files.Changed.For(account).Publish(context.WithoutCancel(ctx), s.node.Client, ev); err != nil {
		s.log.WarnContext(ctx, "publishing a file change failed", "err", err)
	}
}
