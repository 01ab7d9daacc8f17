package registrysvc

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// hostileTools copies testdata/hostile into a fresh tool folder, so that a
// tool that escaped could only plant files in a throwaway copy.
func hostileTools(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob("testdata/hostile/*.py")
	if err != nil || len(files) == 0 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A hostile tool, run by a registry-svc that holds secrets the way `mirobody
// dev` does (SECRET_KEY in its environment, NATS seeds and Postgres files in
// DEV_DIR, a config file), looks for them every way issue 15 found and
// finds none; the test logs each attempt and its outcome. It runs as root
// in CI, where the sandbox must also shed root.
func TestToolSandboxHostileTool(t *testing.T) {
	const secret = "sandbox-test-secret-key-0123456789abcdef"
	t.Setenv("SECRET_KEY", secret)
	devDir := t.TempDir()
	plant := func(rel, content string) string {
		p := filepath.Join(devDir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	targets := []string{
		plant("secret_key", secret),
		plant("nats-creds/cli.nk", "SUACLISEEDFORTHETEST"),
		plant("nats-creds/registry.nk", "SUAREGISTRYSEEDFORTHETEST"),
		plant("pg/PG_VERSION", "16"),
		plant("config.yaml", "SECRET_KEY: "+secret+"\n"),
		filepath.Join(devDir, "nats-creds"),
		devDir,
	}
	if abs, err := filepath.Abs("testdata/empty.yaml"); err == nil {
		targets = append(targets, abs)
	}
	if cwd, err := os.Getwd(); err == nil {
		targets = append(targets, cwd)
	}
	tools := hostileTools(t)
	e := start(t, map[string]string{"MCP_TOOL_DIRS": tools, "PYTHON_WORKERS": "1", "TOOL_SANDBOX": "required",
		"DEV_DIR": devDir, "SECRET_KEY": secret})
	args, _ := json.Marshal(map[string]any{"service_pid": os.Getpid(), "paths": targets})
	res, err := e.call(t, alice, "hunt", string(args))
	if err != nil || res.IsError {
		t.Fatalf("hunt: %v %s", err, text(res))
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(text(res)), &got); err != nil {
		t.Fatalf("result %q: %v", text(res), err)
	}
	if want := 12 + len(targets); len(got) != want {
		t.Errorf("the tool reported %d attempts, want %d", len(got), want)
	}
	for _, attempt := range slices.Sorted(maps.Keys(got)) {
		outcome := got[attempt]
		t.Logf("tried: %-45s -> %s", attempt, outcome)
		if !strings.HasPrefix(outcome, "denied: ") {
			t.Errorf("the hostile tool could %s: %s", attempt, outcome)
		}
		if strings.Contains(outcome, secret) {
			t.Errorf("%s revealed SECRET_KEY", attempt)
		}
	}
	if _, err := os.Stat(filepath.Join(tools, "planted.py")); err == nil {
		t.Error("the hostile tool planted a .py in its tool folder")
	}
}

// Ordinary tools keep working in the sandbox: temp files in their private
// TMPDIR, the network (a loopback server of the test's), imports of a
// sibling _helpers module; and they run as nobody in their own PID space.
func TestToolSandboxOrdinaryTools(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "pong") }))
	t.Cleanup(srv.Close)
	e := start(t, map[string]string{"MCP_TOOL_DIRS": hostileTools(t), "PYTHON_WORKERS": "1", "TOOL_SANDBOX": "required"})
	args := func(v map[string]string) string { b, _ := json.Marshal(v); return string(b) }
	for _, tc := range []struct {
		tool, args, want string
	}{
		{"scratch", args(map[string]string{"text": "kept"}), "kept in " + os.TempDir() + "/mirobody-tool-"},
		{"fetch", args(map[string]string{"url": srv.URL}), "pong"},
		{"greet", args(map[string]string{"name": "ada"}), "hello ada"},
		{"who", `{}`, "uid=65534 pid=1 ppid=0"},
	} {
		res, err := e.call(t, alice, tc.tool, tc.args)
		if err != nil || res.IsError || !strings.HasPrefix(text(res), tc.want) {
			t.Errorf("%s: %v %q, want %q", tc.tool, err, text(res), tc.want)
		}
	}
}

// TOOL_SANDBOX=required refuses to start where tools cannot be sandboxed,
// and auto starts with one warning line. Unavailability is real, not
// pretended: the launcher is a binary that does not hold it (/bin/false),
// which is what a build without the RunToolSandbox hook looks like.
func TestToolSandboxUnavailable(t *testing.T) {
	for _, mode := range []string{"required", "auto"} {
		t.Run(mode, func(t *testing.T) {
			url := servicetest.NATS(t)
			log, lb := servicetest.CaptureLogger(t)
			s := New(Options{Config: testConfig(t, url, map[string]string{"MCP_TOOL_DIRS": hostileTools(t), "PYTHON_WORKERS": "1",
				"TOOLS_WATCH": "false", "TOOL_SANDBOX": mode}), Log: log, SandboxLauncher: "/bin/false"})
			err := s.Start(context.Background())
			if mode == "required" {
				if err == nil {
					_ = s.Stop(context.Background())
					t.Fatal("started without a sandbox in required mode")
				}
				if !strings.Contains(err.Error(), "TOOL_SANDBOX is required") {
					t.Errorf("error %q does not name TOOL_SANDBOX", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("auto mode refused to start: %v", err)
			}
			t.Cleanup(func() { _ = s.Stop(context.Background()) })
			if n := strings.Count(lb.String(), "cannot sandbox"); n != 1 {
				t.Errorf("%d warning lines about the sandbox, want 1:\n%s", n, lb.String())
			}
		})
	}
}

// A tool folder or TOOL_PATHS entry that contains DEV_DIR would hand the
// seeds to tools despite the sandbox: start-up refuses it, naming the key.
func TestToolSandboxRefusesExposedDevDir(t *testing.T) {
	tools := hostileTools(t)
	devDir := filepath.Join(tools, ".mirobody")
	if err := os.Mkdir(devDir, 0o700); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for _, tc := range []struct {
		name, key string
		keys      map[string]string
	}{
		{"tool folder", "MCP_TOOL_DIRS", map[string]string{"MCP_TOOL_DIRS": tools, "DEV_DIR": devDir}},
		{"granted path", "TOOL_PATHS", map[string]string{"MCP_TOOL_DIRS": other, "DEV_DIR": devDir, "TOOL_PATHS": "x=" + tools}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.keys["TOOLS_WATCH"] = "false"
			s := New(Options{Config: testConfig(t, servicetest.NATS(t), tc.keys), Log: servicetest.Logger(t)})
			err := s.Start(context.Background())
			if err == nil {
				_ = s.Stop(context.Background())
				t.Fatal("started with DEV_DIR inside what tools may read")
			}
			if !strings.Contains(err.Error(), tc.key) {
				t.Errorf("error %q does not name %s", err, tc.key)
			}
		})
	}
}
