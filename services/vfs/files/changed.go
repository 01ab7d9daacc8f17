package files

import "github.com/mirobody/mirobody-go/services/wire"

// Changed, for one account (Changed.For(account)), is published after a
// write, edit, delete or move of that account's /memories files, so that
// MCP clients subscribed to a file hear of it (gateway/design.md
// "Subscriptions"). Session files are not announced: no MCP client can
// name them.
var Changed = wire.Event[ChangedEvent]{Subject: "events.vfs.files.changed.*"}

// ChangedEvent names the changed files: absolute paths under MemoriesRoot
// (both paths of a move).
type ChangedEvent struct {
	Paths []string `json:"paths"`
}
