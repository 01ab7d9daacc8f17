package registrysvc

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/servicetest"
)

// TestExampleTools keeps the repository's tools/ folder (used by dev)
// discoverable and working.
func TestExampleTools(t *testing.T) {
	t.Run("without an API key", func(t *testing.T) {
		t.Setenv("OPENWEATHER_API_KEY", "")
		url := servicetest.NATS(t)
		serveKinds(t, url) // alice holds no data: the gated built-ins stay hidden
		e := startOn(t, url, map[string]string{"MCP_TOOL_DIRS": "../tools,builtin", "SKILL_DIRS": "../skills", "PYTHON_WORKERS": "1"})
		got := e.names(t, alice)
		want := []string{"body_mass_index", "current_time", "heart_rate_zones", "import_health_indicators", "normalize_unit", "read_skill", "resolve_indicator", "whoami"}
		if !slices.Equal(got, want) {
			t.Fatalf("tools = %v, want %v", got, want)
		}
		calls := []struct{ tool, args, want string }{
			{"body_mass_index", `{"weight": 70, "height": 175}`, `"healthy weight"`},
			{"heart_rate_zones", `{"age": 40, "resting_heart_rate": 60}`, `"karvonen"`},
			{"current_time", `{"timezone": "Europe/Paris"}`, `"weekday"`},
			{"whoami", `{}`, `"acct-alice"`},
		}
		for _, c := range calls {
			r, err := e.call(t, alice, c.tool, c.args)
			if err != nil || r.IsError || !strings.Contains(text(r), c.want) {
				t.Errorf("%s: %v %v", c.tool, r, err)
			}
		}
		ctx := context.Background()
		page, err := e.client.ReadResource(ctx, &registry.ResourceReadRequest{URI: "ui://clock/now.html"})
		if err != nil || page.Contents[0].MimeType != "text/html;profile=mcp-app" || page.Contents[0].Text == nil {
			t.Errorf("ui://clock/now.html: %+v %v", page, err)
		}
		plan, err := e.client.GetPrompt(ctx, &registry.PromptGetRequest{Name: "plan_my_day", Arguments: map[string]string{"city": "Paris"}})
		if err != nil || len(plan.Messages) != 1 || !strings.Contains(string(plan.Messages[0]), "focus on health") {
			t.Errorf("plan_my_day: %+v %v", plan, err)
		}
		if strings.Contains(e.logs.String(), "level=WARN") {
			t.Errorf("the example tools produced warnings:\n%s", e.logs.String())
		}
	})
	t.Run("with an API key", func(t *testing.T) {
		// Tools see only the variables TOOL_ENV lists.
		e := start(t, map[string]string{"MCP_TOOL_DIRS": "../tools", "PYTHON_WORKERS": "1",
			"TOOL_ENV": "OPENWEATHER_API_KEY", "OPENWEATHER_API_KEY": "test-key"})
		if !slices.Contains(e.names(t, alice), "current_weather") {
			t.Error("WeatherService is not enabled by its API key")
		}
	})
}
