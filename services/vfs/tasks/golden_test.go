package tasks_test

import (
	"testing"

	"github.com/mirobody/mirobody-go/services/vfs/tasks"
	"github.com/mirobody/mirobody-go/services/wire/wiretest"
)

// TestGolden pins the JSON of every message type of the contract
// (go test -update rewrites testdata after a deliberate change).
func TestGolden(t *testing.T) { wiretest.Golden(t, "testdata", tasks.Contracts()) }
