package stack

import (
	"path/filepath"
	"strings"
	"testing"

	agentsvc "github.com/mirobody/mirobody-go/agent-svc"
	registrysvc "github.com/mirobody/mirobody-go/registry-svc"
	"github.com/mirobody/mirobody-go/services/servicetest"
	vfssvc "github.com/mirobody/mirobody-go/vfs-svc"
)

// Every service that reads SKILL_DIRS warns at start-up about a folder
// that is missing, and starts anyway.
func TestMissingSkillsFolderWarns(t *testing.T) {
	natsURL := servicetest.NATS(t)
	db := servicetest.Postgres(t, nil)
	log, logs := servicetest.CaptureLogger(t)
	cfg := testConfig(t, natsURL, db.DSN)
	missing := filepath.Join(t.TempDir(), "skills")
	cfg.SkillDirs = []string{missing}
	startGroup(t, vfssvc.New(vfssvc.Options{Config: cfg, Log: log}), registrysvc.New(registrysvc.Options{Config: cfg, Log: log}),
		agentsvc.New(agentsvc.Options{Config: cfg, Log: log}))
	for _, component := range []string{"vfs-svc", "registry-svc", "agent-svc"} {
		found := false
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "SKILL_DIRS folder is missing") && strings.Contains(line, "component="+component) && strings.Contains(line, missing) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s did not warn about the missing skills folder %s", component, missing)
		}
	}
}
