package stack

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/mirobody/mirobody-go/services/conf"
)

// repoRoot is where docker-compose.yml and deploy/ live.
const repoRoot = "../.."

type composeFile struct {
	Services map[string]struct {
		Image   string            `yaml:"image"`
		Command []string          `yaml:"command"`
		Env     map[string]string `yaml:"environment"`
		Volumes []string          `yaml:"volumes"`
		Build   *struct {
			Context    string            `yaml:"context"`
			Dockerfile string            `yaml:"dockerfile"`
			Args       map[string]string `yaml:"args"`
		} `yaml:"build"`
		Deploy struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
		Profiles []string `yaml:"profiles"`
	} `yaml:"services"`
}

// binaryDir maps a Dockerfile SERVICE argument to the main package it builds.
func binaryDir(service string) string {
	if service == "mirobody" {
		return "services/stack/cmd/mirobody"
	}
	return filepath.Join(service, "cmd", service)
}

// There is no Docker engine here, so the compose file is checked by reading
// it: every app service builds a binary that exists, every environment key
// is a config key, and every mounted file is in the repo.
func TestComposeFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "deploy/docker/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Targets {
		s, ok := cf.Services[name]
		if !ok {
			t.Errorf("compose has no %s service", name)
			continue
		}
		if s.Build == nil || s.Build.Args["SERVICE"] != name {
			t.Errorf("%s: build.args.SERVICE = %v, want %s", name, s.Build, name)
			continue
		}
		if _, err := os.Stat(filepath.Join(repoRoot, binaryDir(name), "main.go")); err != nil {
			t.Errorf("%s: its command does not exist: %v", name, err)
		}
		if !bytes.Contains(dockerfile, []byte(name)) {
			t.Errorf("Dockerfile does not know SERVICE=%s", name)
		}
		for k := range s.Env {
			if !conf.IsKey(k) {
				t.Errorf("%s: environment key %s is not a config key", name, k)
			}
		}
		if s.Env["NATS_URL"] == "" {
			t.Errorf("%s: no NATS_URL", name)
		}
	}
	if cf.Services["agent-svc"].Deploy.Replicas != 2 {
		t.Errorf("agent-svc replicas = %d, want 2", cf.Services["agent-svc"].Deploy.Replicas)
	}
	reg := strings.Join(cf.Services["registry-svc"].Volumes, " ")
	for _, want := range []string{"./tools:", "./skills:"} {
		if !strings.Contains(reg, want) {
			t.Errorf("registry-svc does not mount %s", want)
		}
	}
	if cf.Services["vfs-svc"].Env["DATABASE_URL"] == "" {
		t.Error("vfs-svc has no DATABASE_URL")
	}
	for _, p := range []string{"jaeger", "otel-collector"} {
		if s := cf.Services[p]; len(s.Profiles) == 0 {
			t.Errorf("%s should be behind an optional profile", p)
		}
	}
	for name, s := range cf.Services {
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, "./") {
				if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil && !strings.HasPrefix(src, "./tools") && !strings.HasPrefix(src, "./skills") {
					t.Errorf("%s mounts %s, which is not in the repo", name, src)
				}
			}
		}
	}
	natsConf, err := os.ReadFile(filepath.Join(repoRoot, "deploy/nats/nats.conf"))
	if err != nil || !bytes.Contains(natsConf, []byte("jetstream")) || !bytes.Contains(natsConf, []byte("http_port")) {
		t.Errorf("deploy/nats/nats.conf must enable JetStream and monitoring (err %v)", err)
	}
}

// The Kubernetes ConfigMap and Secret hold only config keys, and agent-svc
// has an HPA.
func TestKubernetesManifests(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(repoRoot, "deploy/k8s/*.yaml"))
	if len(files) == 0 {
		t.Fatal("no manifests")
	}
	kinds := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc struct {
				Kind       string                `yaml:"kind"`
				Metadata   struct{ Name string } `yaml:"metadata"`
				Data       map[string]string     `yaml:"data"`
				StringData map[string]string     `yaml:"stringData"`
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			kinds[doc.Kind+"/"+doc.Metadata.Name] = true
			for k := range doc.Data {
				if doc.Kind == "ConfigMap" && !conf.IsKey(k) {
					t.Errorf("%s: ConfigMap key %s is not a config key", f, k)
				}
			}
			for k := range doc.StringData {
				if !conf.IsKey(k) {
					t.Errorf("%s: Secret key %s is not a config key", f, k)
				}
			}
		}
	}
	for _, want := range []string{"Deployment/gateway", "Deployment/registry-svc", "Deployment/agent-svc", "Deployment/vfs-svc", "HorizontalPodAutoscaler/agent-svc"} {
		if !kinds[want] {
			t.Errorf("no %s manifest", want)
		}
	}
}
