package registrysvc

import (
	"encoding/json"
	"testing"
)

// A Python tool sees only PATH, HOME, LANG, TZ and the TOOL_ENV names, not
// the registry's secrets, even when they sit in the process environment.
func TestToolEnvironment(t *testing.T) {
	secrets := map[string]string{"SECRET_KEY": "mirobody-secret-for-the-tool-environment-test", "OPENAI_API_KEY": "sk-provider", "DATABASE_URL": "postgres://u:p@db/x"}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("WEATHER_TOKEN", "w-123")
	keys := map[string]string{"MCP_TOOL_DIRS": "testdata/env", "PYTHON_WORKERS": "1", "TOOL_ENV": "WEATHER_TOKEN,NOT_SET_ANYWHERE",
		"WEATHER_TOKEN": "w-123", "TZ": "Europe/Berlin"}
	for k, v := range secrets {
		keys[k] = v
	}
	e := start(t, keys)
	res, err := e.call(t, alice, "environment", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(text(res)), &got); err != nil {
		t.Fatalf("result %q: %v", text(res), err)
	}
	for k := range secrets {
		if _, ok := got[k]; ok {
			t.Errorf("tool sees %s", k)
		}
	}
	want := map[string]string{"WEATHER_TOKEN": "w-123", "TZ": "Europe/Berlin", "LANG": "C.UTF-8", "HOME": "/tmp", "PATH": "/usr/local/bin:/usr/bin:/bin"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tool sees %s=%q, want %q", k, got[k], v)
		}
	}
	// Python may add a few of its own (LC_CTYPE when it coerces the
	// locale), and the sandbox sets TMPDIR, but nothing else of ours.
	for k := range got {
		if _, ok := want[k]; !ok && k != "LC_CTYPE" && k != "TMPDIR" {
			t.Errorf("tool sees unexpected %s", k)
		}
	}
}
