package wire_test

import (
	"testing"

	"github.com/mirobody/mirobody-go/services/wire"
	"github.com/mirobody/mirobody-go/services/wire/wiretest"
)

// TestGolden pins the JSON of the sys endpoints every service answers.
func TestGolden(t *testing.T) {
	wiretest.Golden(t, "testdata", []wire.Contract{wire.SysPing("svc"), wire.SysInfo("svc")})
}
