package pyhost

import (
	"os"
	"testing"

	"github.com/mirobody/mirobody-go/registry-svc/internal/sandbox"
)

// TestMain lets this test binary serve as the tool sandbox's launcher.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}
