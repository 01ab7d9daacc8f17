package agentsvc

import (
	"context"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

func TestBaseStartupWarnsOfPrivateMCPURL(t *testing.T) {
	natsURL := servicetest.NATS(t)
	hosted := map[string]conf.Provider{"oa": {Type: "openai-responses", Model: "m", APIKey: "OPENAI_API_KEY"}}
	local := map[string]conf.Provider{"double": {Type: "openai-responses", Model: "m", BaseURL: "http://127.0.0.1:9/v1"}}
	cases := []struct {
		name      string
		publicURL string
		providers map[string]conf.Provider
		key       string
		warn      bool
	}{
		{"localhost with a hosted provider", "http://localhost:18080", hosted, "sk-secret-test", true},
		{"private address with a hosted provider", "http://10.0.0.5:18080", hosted, "sk-secret-test", true},
		{"public URL", "https://mirobody.example.com", hosted, "sk-secret-test", false},
		{"hosted provider without its key", "http://localhost:18080", hosted, "", false},
		{"provider on loopback itself", "http://localhost:18080", local, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"OPENAI_API_KEY": tc.key}
			res, err := conf.Load(conf.LoadOptions{Path: "", LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok && v != "" }})
			if err != nil {
				t.Fatal(err)
			}
			cfg := res.Config
			cfg.NATSURL, cfg.MCPPublicURL, cfg.ProvidersBase = natsURL, tc.publicURL, tc.providers
			log, buf := servicetest.CaptureLogger(t)
			s := New(Options{Config: cfg, Log: log})
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Stop(context.Background()) })
			warned := strings.Contains(buf.String(), "MCP_PUBLIC_URL is a loopback or private address")
			if warned != tc.warn {
				t.Fatalf("warned = %v, want %v; log:\n%s", warned, tc.warn, buf.String())
			}
			if tc.warn && (!strings.Contains(buf.String(), "providers=oa") || strings.Contains(buf.String(), "sk-secret-test")) {
				t.Fatalf("warning does not name the provider or leaks the key:\n%s", buf.String())
			}
		})
	}
}
