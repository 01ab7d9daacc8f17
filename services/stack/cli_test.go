package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/servicetest"
)

// closedNATSConfig writes a config whose NATS_URL points at a loopback
// port nothing listens on.
func closedNATSConfig(t *testing.T) (file, url string) {
	t.Helper()
	url = "nats://" + servicetest.FreeAddr(t)
	file = filepath.Join(t.TempDir(), "config.yaml")
	must(t, os.WriteFile(file, []byte(fmt.Sprintf("NATS_URL: %s\nDEV_DIR: %s\n", url, t.TempDir())), 0o600))
	return file, url
}

// TestCLIMessages pins what the commands say to a newcomer: help is no
// failure, the usage lists the options people look for, and an
// unreachable NATS is named with the setting that fixes it.
func TestCLIMessages(t *testing.T) {
	cfg, natsURL := closedNATSConfig(t)
	health, err := filepath.Abs("../../examples/health.csv")
	must(t, err)
	cases := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderr   []string
		notInAny []string
	}{
		{name: "usage lists chat --agent and mcp add --oauth", args: []string{"help"},
			stdout: []string{"mirobody chat [--key KEY] [--session ID] [--agent deep|base]", "--oauth", "--password-file"}, notInAny: []string{"--password P"}},
		{name: "chat --help is usage only", args: []string{"chat", "--help"},
			stderr: []string{"usage: mirobody chat", "-agent"}, notInAny: []string{"flag: help requested", "mirobody chat:"}},
		{name: "account create --help", args: []string{"account", "create", "--help"},
			stderr: []string{"-password-file"}, notInAny: []string{"help requested"}},
		{name: "account create without NATS", args: []string{"account", "create", "--email", "a@example.com", "--config", cfg}, code: 1,
			stderr: []string{"cannot reach NATS at " + natsURL, "NATS_URL"}, notInAny: []string{"internal", "vfs service"}},
		{name: "data import without NATS", args: []string{"data", "import", "--health", health, "--account", "a@example.com", "--config", cfg}, code: 1,
			stderr: []string{"cannot reach NATS at " + natsURL, "NATS_URL"}, notInAny: []string{"internal", "vfs service"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Main(context.Background(), tc.args, &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tc.code, out.String(), errOut.String())
			}
			for _, s := range tc.stdout {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errOut.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut.String())
				}
			}
			for _, s := range tc.notInAny {
				if strings.Contains(out.String()+errOut.String(), s) {
					t.Errorf("output holds %q:\n%s%s", s, out.String(), errOut.String())
				}
			}
		})
	}
}

func TestReadPassword(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, content, want, err string }{
		{"first line", "s3cret pass\r\nignored\n", "s3cret pass", ""},
		{"no newline", "pw", "pw", ""},
		{"empty", "\n", "", "the password is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name)
			must(t, os.WriteFile(file, []byte(tc.content), 0o600))
			got, err := readPassword(file, &bytes.Buffer{})
			if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("readPassword = %q, %v; want %q, %q", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestMakeDevProgress: `make dev` says the first build is slow and shows
// what go build compiles, passing compile errors and the exit status on.
func TestMakeDevProgress(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	must(t, err)
	if !strings.Contains(string(mk), "takes a few minutes") || !strings.Contains(string(mk), "build-progress.sh") {
		t.Error("make dev no longer warns that the first build is slow or shows its progress")
	}
	fakeGo := filepath.Join(t.TempDir(), "go")
	must(t, os.WriteFile(fakeGo, []byte("#!/bin/sh\nprintf 'github.com/a/b\\ngithub.com/c/d\\n# github.com/c/d\\nd.go:1:2: undefined: x\\n' >&2\nexit 3\n"), 0o755))
	cmd := exec.Command("sh", "../../deploy/scripts/build-progress.sh", "-o", "bin/x", "./x")
	cmd.Env = append(os.Environ(), "GO="+fakeGo)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("exit %v, want go build's 3; output %q", err, out)
	}
	for _, want := range []string{"d.go:1:2: undefined: x", "compiled 2 packages"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q: %q", want, out)
		}
	}
	if strings.Contains(string(out), "github.com/a/b\n") {
		t.Errorf("package names are listed line by line: %q", out)
	}
}
