package stack

import (
	"encoding/json"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// metricModules are the modules whose code registers Mirobody metrics.
var metricModules = []string{"services", "gateway", "registry-svc", "agent-svc", "vfs-svc"}

// metricDecl finds a metric's name in its Opts literal, and labelDecl the
// label names of its Vec constructor.
var (
	metricDecl = regexp.MustCompile(`Name:\s*"(mirobody_[a-z0-9_]+)"`)
	labelDecl  = regexp.MustCompile(`\[\]string\{([^}]*)\}`)
	quoted     = regexp.MustCompile(`"([^"]+)"`)
)

// registeredMetrics reads the metric names, with their label names, that
// the code registers. Reading the source rather than gathering a registry:
// the constructors of registry-svc, agent-svc and the gateway are not
// exported, and a Vec with no observations gathers as nothing.
func registeredMetrics(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, mod := range metricModules {
		err := filepath.WalkDir(filepath.Join(repoRoot, mod), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			locs := metricDecl.FindAllSubmatchIndex(src, -1)
			for i, loc := range locs {
				// The labels are in this declaration, before the next one.
				end := len(src)
				if i+1 < len(locs) {
					end = locs[i+1][0]
				}
				var labels []string
				if m := labelDecl.FindSubmatch(src[loc[1]:end]); m != nil {
					for _, q := range quoted.FindAllSubmatch(m[1], -1) {
						labels = append(labels, string(q[1]))
					}
				}
				out[string(src[loc[2]:loc[3]])] = labels
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var (
	// promSelector is a metric name followed by a label matcher, a range
	// or the end of a subexpression: a name in a series selector.
	promSelector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{|\[|\)|$)`)
	// promGrouping is the label list of by (...) or without (...).
	promGrouping = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	// promMatcher is a label name in a matcher.
	promMatcher = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=|!=|=~|!~)\s*"`)
	// promLiteral is a label value or a Grafana variable, neither a name.
	promLiteral = regexp.MustCompile(`"[^"]*"|\$__\w+`)
)

// scrapeLabels are the labels Prometheus adds and le of the histograms.
var scrapeLabels = []string{"job", "instance", "le"}

// baseMetric maps a series name to the metric that exports it (histograms
// export _bucket, _sum and _count).
func baseMetric(name string, known map[string][]string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suffix); ok {
			if _, ok := known[b]; ok {
				return b
			}
		}
	}
	return name
}

// Every PromQL expression of the dashboard charts metrics the code
// registers, grouped and matched only by their labels, and every panel
// reads the provisioned Prometheus datasource.
func TestDashboardMetricsExist(t *testing.T) {
	known := registeredMetrics(t)
	for _, want := range []string{"mirobody_nats_requests_total", "mirobody_registry_tool_calls_total",
		"mirobody_http_requests_total", "mirobody_agent_llm_calls_total", "mirobody_dependency_up"} {
		if _, ok := known[want]; !ok {
			t.Fatalf("the source scan found no %s (found %v); the scan is broken", want, known)
		}
	}
	known["up"] = nil // Prometheus's own per-target series
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy/grafana/dashboards/mirobody.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	ds, err := os.ReadFile(filepath.Join(repoRoot, "deploy/grafana/provisioning/datasources/prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var dsConf struct {
		Datasources []struct{ UID, Type, URL string } `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(ds, &dsConf); err != nil || len(dsConf.Datasources) != 1 || dsConf.Datasources[0].Type != "prometheus" {
		t.Fatalf("datasource provisioning: %+v, %v; want one prometheus datasource", dsConf, err)
	}
	dsUID := dsConf.Datasources[0].UID

	charted := map[string]bool{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != dsUID || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v with %d queries, want the provisioned %q", p.Title, p.Datasource, len(p.Targets), dsUID)
		}
		for _, q := range p.Targets {
			expr := promLiteral.ReplaceAllString(q.Expr, `""`)
			var metrics []string
			for _, m := range promSelector.FindAllStringSubmatch(expr, -1) {
				name := baseMetric(m[1], known)
				if slices.Contains(scrapeLabels, m[1]) || isGroupedLabel(expr, m[1]) {
					continue
				}
				if _, ok := known[name]; !ok {
					t.Errorf("panel %q: %q charts %s, which no code registers", p.Title, q.Expr, m[1])
					continue
				}
				metrics = append(metrics, name)
				charted[name] = true
			}
			if len(metrics) == 0 {
				t.Errorf("panel %q: found no metric in %q", p.Title, q.Expr)
				continue
			}
			labels := slices.Clone(scrapeLabels)
			for _, m := range metrics {
				labels = append(labels, known[m]...)
			}
			var used []string
			for _, g := range promGrouping.FindAllStringSubmatch(expr, -1) {
				for _, l := range strings.Split(g[1], ",") {
					used = append(used, strings.TrimSpace(l))
				}
			}
			for _, m := range promMatcher.FindAllStringSubmatch(q.Expr, -1) {
				used = append(used, m[1])
			}
			for _, l := range used {
				if l != "" && !slices.Contains(labels, l) {
					t.Errorf("panel %q: %q uses label %s, which %v do not have (labels %v)", p.Title, q.Expr, l, metrics, labels)
				}
			}
		}
	}
	// The panels: NATS, tools, HTTP, model calls and dependencies.
	for _, want := range []string{"mirobody_nats_requests_total", "mirobody_nats_request_duration_seconds",
		"mirobody_registry_tool_calls_total", "mirobody_registry_tool_call_duration_seconds",
		"mirobody_http_requests_total", "mirobody_http_request_duration_seconds",
		"mirobody_agent_llm_calls_total", "mirobody_agent_llm_tokens_total",
		"mirobody_agent_llm_time_to_first_token_seconds", "mirobody_dependency_up"} {
		if !charted[want] {
			t.Errorf("the dashboard does not chart %s", want)
		}
	}
}

// isGroupedLabel reports whether name appears inside a by (...) or
// without (...) list of expr, where it is a label, not a metric.
func isGroupedLabel(expr, name string) bool {
	for _, g := range promGrouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if strings.TrimSpace(l) == name {
				return true
			}
		}
	}
	return false
}

// The Prometheus config scrapes /metrics on the admin port of every
// service compose runs, under the compose service name.
func TestDeployPrometheusScrapesEveryService(t *testing.T) {
	cf := readCompose(t)
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy/prometheus/prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var pc struct {
		ScrapeConfigs []struct {
			JobName      string `yaml:"job_name"`
			MetricsPath  string `yaml:"metrics_path"`
			DNSSDConfigs []struct {
				Names []string `yaml:"names"`
				Type  string   `yaml:"type"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(data, &pc); err != nil {
		t.Fatal(err)
	}
	scraped := map[string]bool{} // host:port on /metrics
	for _, sc := range pc.ScrapeConfigs {
		if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
			continue
		}
		for _, d := range sc.DNSSDConfigs {
			for _, n := range d.Names {
				scraped[net.JoinHostPort(n, strconv.Itoa(d.Port))] = true
			}
		}
		for _, s := range sc.StaticConfigs {
			for _, tg := range s.Targets {
				scraped[tg] = true
			}
		}
	}
	for _, name := range Targets {
		_, port, err := net.SplitHostPort(cf.Services[name].Env["ADMIN_ADDR"])
		if err != nil {
			t.Errorf("compose %s: ADMIN_ADDR %q: %v", name, cf.Services[name].Env["ADMIN_ADDR"], err)
			continue
		}
		if target := net.JoinHostPort(name, port); !scraped[target] {
			t.Errorf("prometheus.yml does not scrape %s/metrics (scrapes %v)", target, scraped)
		}
	}
}

// The metrics profile runs Prometheus with deploy/prometheus and Grafana
// provisioned from deploy/grafana, and the app services stay out of it.
func TestComposeMetricsProfile(t *testing.T) {
	cf := readCompose(t)
	mounts := map[string][]string{
		"prometheus": {"./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro"},
		"grafana": {"./deploy/grafana/provisioning:/etc/grafana/provisioning:ro",
			"./deploy/grafana/dashboards:/var/lib/grafana/dashboards:ro"},
	}
	for name, want := range mounts {
		s, ok := cf.Services[name]
		if !ok {
			t.Errorf("compose has no %s service", name)
			continue
		}
		if !slices.Equal(s.Profiles, []string{"metrics"}) {
			t.Errorf("%s: profiles %v, want [metrics]", name, s.Profiles)
		}
		for _, v := range want {
			if !slices.Contains(s.Volumes, v) {
				t.Errorf("%s does not mount %s: %v", name, v, s.Volumes)
			}
		}
	}
	if !slices.Contains(cf.Services["prometheus"].Command, "--config.file=/etc/prometheus/prometheus.yml") {
		t.Errorf("prometheus does not run the mounted config: %v", cf.Services["prometheus"].Command)
	}
	provider, err := os.ReadFile(filepath.Join(repoRoot, "deploy/grafana/provisioning/dashboards/mirobody.yml"))
	if err != nil || !strings.Contains(string(provider), "path: /var/lib/grafana/dashboards") {
		t.Errorf("the dashboard provider must load /var/lib/grafana/dashboards (err %v)", err)
	}
	for _, name := range Targets {
		if len(cf.Services[name].Profiles) != 0 {
			t.Errorf("%s is behind a profile; it must run by default", name)
		}
	}
}

// readCompose parses docker-compose.yml.
func readCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatal(err)
	}
	return cf
}
