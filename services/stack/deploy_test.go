package stack

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/natsx"
)

// repoRoot is where docker-compose.yml and deploy/ live.
const repoRoot = "../.."

// skillReaders are the deploy targets that read SKILL_DIRS: registry-svc
// (read_skill), agent-svc (the prompt's skill list) and vfs-svc (/skills).
var skillReaders = []string{"registry-svc", "agent-svc", "vfs-svc"}

type composeFile struct {
	Services map[string]struct {
		Image   string            `yaml:"image"`
		Command []string          `yaml:"command"`
		Env     map[string]string `yaml:"environment"`
		Volumes []string          `yaml:"volumes"`
		Ports   []string          `yaml:"ports"`
		Secrets []struct {
			Source string `yaml:"source"`
			Target string `yaml:"target"`
			UID    string `yaml:"uid"`
		} `yaml:"secrets"`
		Build *struct {
			Context    string            `yaml:"context"`
			Dockerfile string            `yaml:"dockerfile"`
			Args       map[string]string `yaml:"args"`
		} `yaml:"build"`
		Deploy struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
		Profiles []string `yaml:"profiles"`
	} `yaml:"services"`
	Secrets map[string]struct {
		Environment string `yaml:"environment"`
	} `yaml:"secrets"`
}

// secretsOf is the README's "Secrets per service" table: the secret keys
// each service uses, and so the only ones compose and Kubernetes give it.
// registry-svc runs tool code and holds none.
var secretsOf = map[string][]string{
	"gateway":      {"SECRET_KEY", "MCP_SESSION_KEYS"},
	"vfs-svc":      {"SECRET_KEY", "DATABASE_URL"},
	"agent-svc":    {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"},
	"registry-svc": nil,
	"cli":          nil,
}

// secretKeys are every secret config key.
var secretKeys = []string{"SECRET_KEY", "DATABASE_URL", "MCP_SESSION_KEYS", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"}

// identityOf is the NATS identity a deploy target runs as.
func identityOf(target string) string { return strings.TrimSuffix(target, "-svc") }

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
	if !bytes.Contains(dockerfile, []byte("COPY skills /app/skills")) || !bytes.Contains(dockerfile, []byte("SKILL_DIRS=/app/skills")) {
		t.Error("the Dockerfile must ship the skills folder at SKILL_DIRS")
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
	// Every service that reads SKILL_DIRS gets it, with the folder mounted there.
	for _, name := range skillReaders {
		s := cf.Services[name]
		dir := s.Env["SKILL_DIRS"]
		if dir == "" || !slices.Contains(s.Volumes, "./skills:"+dir+":ro") {
			t.Errorf("%s: SKILL_DIRS %q with volumes %v, want ./skills mounted read-only there", name, dir, s.Volumes)
		}
	}
	natsConf, err := os.ReadFile(filepath.Join(repoRoot, "deploy/nats/nats.conf"))
	if err != nil || !bytes.Contains(natsConf, []byte("http_port")) {
		t.Errorf("deploy/nats/nats.conf must enable monitoring (err %v)", err)
	}
	// Nothing uses JetStream: enabling it would only keep state to back up.
	if bytes.Contains(bytes.ToLower(natsConf), []byte("jetstream {")) || slices.ContainsFunc(cf.Services["nats"].Volumes, func(v string) bool { return strings.Contains(v, ":/data") }) {
		t.Errorf("NATS must not enable JetStream or keep a data volume")
	}

	// NATS: authenticated, not on the host, one seed per service.
	for name, s := range cf.Services {
		for _, p := range s.Ports {
			if strings.HasSuffix(p, ":4222") || strings.HasSuffix(p, ":8222") || p == "4222" || p == "8222" {
				t.Errorf("%s publishes NATS port %s on the host", name, p)
			}
		}
	}
	nats := cf.Services["nats"]
	if !slices.Contains(nats.Volumes, "./deploy/nats/auth.conf:/etc/nats/auth.conf:ro") {
		t.Errorf("nats does not mount deploy/nats/auth.conf next to nats.conf: %v", nats.Volumes)
	}
	for _, id := range natsx.IdentityNames() {
		if !strings.Contains(nats.Env[natsx.UserKeyEnv(id)], "${"+natsx.UserKeyEnv(id)+":?") {
			t.Errorf("nats does not require %s from .env: %q", natsx.UserKeyEnv(id), nats.Env[natsx.UserKeyEnv(id)])
		}
	}
	seedOf := map[string]string{"cli": natsx.IdentityCLI}
	for _, name := range Targets {
		seedOf[name] = identityOf(name)
	}
	for name, id := range seedOf {
		s := cf.Services[name]
		if len(s.Secrets) != 1 || s.Secrets[0].Target != id+".nk" || s.Secrets[0].UID != "10001" ||
			cf.Secrets[s.Secrets[0].Source].Environment != natsx.SeedEnv(id) {
			t.Errorf("%s: secrets %+v, want only %s.nk from %s, owned by 10001", name, s.Secrets, id, natsx.SeedEnv(id))
		}
		if s.Env["NATS_CREDS_DIR"] != "/run/secrets" {
			t.Errorf("%s: NATS_CREDS_DIR = %q, want /run/secrets", name, s.Env["NATS_CREDS_DIR"])
		}
	}
	// Least secrets: each service gets only the secrets it uses, and the
	// tool host runs sandboxed or not at all.
	for name, allowed := range secretsOf {
		for _, k := range secretKeys {
			if _, ok := cf.Services[name].Env[k]; ok && !slices.Contains(allowed, k) {
				t.Errorf("compose gives %s the secret %s, which it does not use", name, k)
			}
		}
	}
	if got := cf.Services["registry-svc"].Env["TOOL_SANDBOX"]; got != "required" {
		t.Errorf("compose: registry-svc TOOL_SANDBOX = %q, want required", got)
	}
	if cli := cf.Services["cli"]; cli.Build == nil || cli.Build.Args["SERVICE"] != "mirobody" || len(cli.Profiles) == 0 {
		t.Errorf("the cli service must build the mirobody binary behind a profile: %+v", cli)
	}
}

// The Kubernetes ConfigMaps hold only config keys, no Secret ships with
// values, each Deployment gets only its secrets, and agent-svc has an HPA.
func TestKubernetesManifests(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(repoRoot, "deploy/k8s/*.yaml"))
	if len(files) == 0 {
		t.Fatal("no manifests")
	}
	kinds := map[string]bool{}
	credsDir, skillDirs := "", ""
	deployments := map[string][]k8sVolume{}
	pods := map[string]k8sPod{}
	var natsSet k8sPod
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
				Spec       struct {
					Template struct {
						Spec k8sPod `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			kinds[doc.Kind+"/"+doc.Metadata.Name] = true
			switch {
			case doc.Kind == "Deployment":
				deployments[doc.Metadata.Name] = doc.Spec.Template.Spec.volumesMounted()
				pods[doc.Metadata.Name] = doc.Spec.Template.Spec
			case doc.Kind == "Secret":
				// Shipped values would be re-applied over the real ones by
				// every `kubectl apply -f deploy/k8s/` (issue 15).
				t.Errorf("%s ships Secret %s; secrets are created by hand (deploy/k8s/README.md)", f, doc.Metadata.Name)
			case doc.Kind == "StatefulSet" && doc.Metadata.Name == "nats":
				natsSet = doc.Spec.Template.Spec
			case doc.Kind == "ConfigMap" && doc.Metadata.Name == "mirobody-config":
				credsDir, skillDirs = doc.Data["NATS_CREDS_DIR"], doc.Data["SKILL_DIRS"]
			case doc.Kind == "ConfigMap" && doc.Metadata.Name == "nats-config":
				for _, name := range []string{"nats.conf", "auth.conf"} {
					want, err := os.ReadFile(filepath.Join(repoRoot, "deploy/nats", name))
					if err != nil || doc.Data[name] != string(want) {
						t.Errorf("%s: nats-config %s differs from deploy/nats/%s (err %v)", f, name, name, err)
					}
				}
				continue // its keys are file names
			}
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
	for _, want := range []string{"Deployment/gateway", "Deployment/registry-svc", "Deployment/agent-svc", "Deployment/vfs-svc", "HorizontalPodAutoscaler/agent-svc", "ConfigMap/nats-config"} {
		if !kinds[want] {
			t.Errorf("no %s manifest", want)
		}
	}
	// Each Deployment mounts its own seed and no other at NATS_CREDS_DIR.
	if credsDir == "" {
		t.Error("mirobody-config has no NATS_CREDS_DIR")
	}
	for _, name := range Targets {
		var seeds []string
		for _, v := range deployments[name] {
			if v.Secret.SecretName == "mirobody-nats-creds" && v.MountPath == credsDir {
				for _, it := range v.Secret.Items {
					seeds = append(seeds, it.Key)
				}
			}
		}
		if want := identityOf(name) + ".nk"; len(seeds) != 1 || seeds[0] != want {
			t.Errorf("%s mounts NATS seeds %v at %q, want only %s", name, seeds, credsDir, want)
		}
	}
	// Least secrets: each Deployment takes only the keys it uses.
	for name, pod := range pods {
		for _, c := range pod.Containers {
			for _, e := range c.EnvFrom {
				if e.SecretRef.Name != "" {
					t.Errorf("%s takes every key of Secret %s; name the keys it uses instead", name, e.SecretRef.Name)
				}
			}
			sandbox := ""
			for _, e := range c.Env {
				if e.ValueFrom.SecretKeyRef.Key != "" && !slices.Contains(secretsOf[name], e.ValueFrom.SecretKeyRef.Key) {
					t.Errorf("%s gets the secret %s, which it does not use", name, e.ValueFrom.SecretKeyRef.Key)
				}
				if e.Name == "TOOL_SANDBOX" {
					sandbox = e.Value
				}
			}
			if name == "registry-svc" && sandbox != "required" {
				t.Errorf("registry-svc TOOL_SANDBOX = %q, want required", sandbox)
			}
		}
	}
	// Every service that reads SKILL_DIRS (mirobody-config) mounts the skills there.
	for _, name := range skillReaders {
		if !slices.ContainsFunc(deployments[name], func(v k8sVolume) bool {
			return v.ConfigMap.Name == "mirobody-skills" && v.MountPath == skillDirs
		}) {
			t.Errorf("%s does not mount mirobody-skills at SKILL_DIRS %q", name, skillDirs)
		}
	}
	if skillDirs == "" {
		t.Error("mirobody-config has no SKILL_DIRS")
	}
	if slices.ContainsFunc(natsSet.Volumes, func(v k8sVolume) bool { return v.Name == "data" }) {
		t.Error("the nats StatefulSet keeps a data volume, but nothing uses JetStream")
	}
	if len(natsSet.Containers) != 1 || !slices.Contains(natsSet.Containers[0].Args, "/etc/nats/nats.conf") ||
		len(natsSet.Containers[0].EnvFrom) != 1 || natsSet.Containers[0].EnvFrom[0].ConfigMapRef.Name != "mirobody-nats-users" {
		t.Errorf("the nats StatefulSet must run nats-config's nats.conf with the public keys of mirobody-nats-users: %+v", natsSet)
	}
}

// k8sPod is the part of a pod spec the manifest test reads.
type k8sPod struct {
	Containers []struct {
		Args    []string `yaml:"args"`
		EnvFrom []struct {
			ConfigMapRef struct{ Name string } `yaml:"configMapRef"`
			SecretRef    struct{ Name string } `yaml:"secretRef"`
		} `yaml:"envFrom"`
		Env []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom struct {
				SecretKeyRef struct{ Key string } `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	} `yaml:"containers"`
	Volumes []k8sVolume `yaml:"volumes"`
}

// k8sVolume is a pod volume and where the containers mount it.
type k8sVolume struct {
	Name   string `yaml:"name"`
	Secret struct {
		SecretName string                 `yaml:"secretName"`
		Items      []struct{ Key string } `yaml:"items"`
	} `yaml:"secret"`
	ConfigMap struct {
		Name string `yaml:"name"`
	} `yaml:"configMap"`
	MountPath string `yaml:"-"`
}

// volumesMounted returns the pod's volumes, each with its mount path.
func (p k8sPod) volumesMounted() []k8sVolume {
	var out []k8sVolume
	for _, v := range p.Volumes {
		for _, c := range p.Containers {
			for _, m := range c.VolumeMounts {
				if m.Name == v.Name {
					v.MountPath = m.MountPath
					out = append(out, v)
				}
			}
		}
	}
	return out
}
