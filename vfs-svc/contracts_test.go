package vfssvc

import (
	"testing"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/vfs/audit"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/mcpservers"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/vfs/tasks"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire/wiretest"
)

// TestServesItsContracts: vfs-svc answers every endpoint of its seven
// contracts, and nothing else.
func TestServesItsContracts(t *testing.T) {
	e := start(t, nil)
	wiretest.Served(t, e.client, Name, files.Contracts(), accounts.Contracts(), sessions.Contracts(), userdata.Contracts(), mcpservers.Contracts(), audit.Contracts(), tasks.Contracts())
}
