package stack

import (
	"context"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest/nodetools"
)

// nodeTools returns the node 22 binary and the folder whose node_modules
// holds the conformance suite, the TypeScript SDK and the Inspector. The
// first run on a machine installs them with npm (a few minutes; `make
// node-tools` does it ahead); later runs reuse them.
func nodeTools(t *testing.T) (node, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	node, dir, err := nodetools.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return node, dir
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
