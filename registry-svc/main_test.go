package registrysvc

import (
	"os"
	"testing"
)

// TestMain lets this test binary serve as the Python tool sandbox's
// launcher, which every test that starts Python tools uses.
func TestMain(m *testing.M) {
	RunToolSandbox()
	os.Exit(m.Run())
}
