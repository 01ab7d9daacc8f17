package registrysvc

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mirobody/mirobody-go/registry-svc/internal/builtin"
	"github.com/mirobody/mirobody-go/registry-svc/internal/pyhost"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// resourceWatch follows SKILL_DIRS and MCP_RESOURCE_DIRS, whole trees, and
// publishes registry.ResourcesChanged once a burst of changes has settled:
// the URIs whose contents changed (for notifications/resources/updated) and
// whether the resource and prompt lists changed (design.md "Resource
// change events"). It compares content hashes, so an editor's save that
// rewrites a file unchanged announces nothing.
type resourceWatch struct {
	w         *fsnotify.Watcher
	skillDirs []string
	resDirs   []string
	pub       *wire.Client
	log       *slog.Logger
	done      chan struct{}
	seen      resourceState // the last scan; only run touches it once started
}

// resourceState is what a scan found: a content hash per resource URI, and
// the skills as prompts (name and description).
type resourceState struct {
	files   map[string][32]byte
	prompts map[string]string
}

func newResourceWatch(skillDirs, resDirs []string, debounce time.Duration, pub *wire.Client, log *slog.Logger) (*resourceWatch, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("creating the resource folder watch: %w", err)
	}
	rw := &resourceWatch{w: fw, skillDirs: skillDirs, resDirs: resDirs, pub: pub, log: log, done: make(chan struct{})}
	for _, d := range append(slices.Clone(skillDirs), resDirs...) {
		rw.addTree(d)
	}
	rw.seen = rw.scan()
	go rw.run(debounce)
	return rw, nil
}

// addTree watches dir and every folder below it but hidden ones (fsnotify
// watches one folder at a time).
func (rw *resourceWatch) addTree(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") && p != dir {
			return filepath.SkipDir
		}
		if err := rw.w.Add(p); err != nil {
			rw.log.Warn("resource folder cannot be watched; its changes are not announced", "folder", p, "err", err)
		}
		return nil
	})
}

func (rw *resourceWatch) run(debounce time.Duration) {
	defer close(rw.done)
	timer := time.NewTimer(debounce)
	timer.Stop()
	for {
		select {
		case ev, ok := <-rw.w.Events:
			if !ok {
				timer.Stop()
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			if ev.Op.Has(fsnotify.Create) {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
					rw.addTree(ev.Name)
				}
			}
			timer.Reset(debounce)
		case err, ok := <-rw.w.Errors:
			if !ok {
				timer.Stop()
				return
			}
			rw.log.Warn("resource folder watch error", "err", err)
		case <-timer.C:
			rw.publish()
		}
	}
}

// scan hashes every skill file and resource folder file.
func (rw *resourceWatch) scan() resourceState {
	st := resourceState{files: map[string][32]byte{}, prompts: map[string]string{}}
	for _, s := range builtin.Skills(rw.skillDirs) {
		st.prompts[s.Name] = s.Description
		for _, f := range builtin.SkillFiles(s.Dir) {
			if data, err := builtin.ReadSkillFile(s.Dir, f.Path); err == nil {
				st.files["skill://"+s.Name+"/"+f.Path] = sha256.Sum256(data)
			}
		}
	}
	for _, f := range staticFiles(rw.resDirs) {
		if data, err := builtin.ReadSkillFile(f.dir, f.rel); err == nil {
			st.files[f.uri] = sha256.Sum256(data)
		}
	}
	return st
}

// publish scans again and announces what differs from the last scan.
func (rw *resourceWatch) publish() {
	now := rw.scan()
	ev := diffResources(rw.seen, now)
	rw.seen = now
	if !ev.ResourcesListChanged && !ev.PromptsListChanged && len(ev.Updated) == 0 {
		return
	}
	rw.log.Debug("resources changed", "updated", len(ev.Updated), "list_changed", ev.ResourcesListChanged)
	if err := registry.ResourcesChanged.Publish(context.Background(), rw.pub, ev); err != nil {
		rw.log.Warn("publishing a resource change failed", "err", err)
	}
}

// diffResources is the event that takes a client from before to now: every
// URI added, removed or changed is updated.
func diffResources(before, now resourceState) *registry.ResourcesChangedEvent {
	ev := &registry.ResourcesChangedEvent{PromptsListChanged: !maps.Equal(before.prompts, now.prompts)}
	for uri, h := range now.files {
		old, ok := before.files[uri]
		if !ok {
			ev.ResourcesListChanged = true
		}
		if !ok || old != h {
			ev.Updated = append(ev.Updated, uri)
		}
	}
	for uri := range before.files {
		if _, ok := now.files[uri]; !ok {
			ev.ResourcesListChanged = true
			ev.Updated = append(ev.Updated, uri)
		}
	}
	slices.Sort(ev.Updated)
	return ev
}

// close stops the watch and waits for a publish in progress.
func (rw *resourceWatch) close() error {
	err := rw.w.Close()
	<-rw.done
	return err
}

// announceExtras publishes what a reload changed of the Python modules'
// RESOURCES and PROMPTS. Every direct resource of a module counts as
// updated: its function may produce something else now, and asking it
// would run user code for every reload.
func (s *Service) announceExtras(ctx context.Context, old, now *snapshot) {
	ev := &registry.ResourcesChangedEvent{
		ResourcesListChanged: !slices.EqualFunc(old.resources, now.resources, sameResource),
		PromptsListChanged:   !slices.EqualFunc(old.prompts, now.prompts, samePrompt),
	}
	for _, r := range now.resources {
		if r.URI != "" {
			ev.Updated = append(ev.Updated, r.URI)
		}
	}
	if !ev.ResourcesListChanged && !ev.PromptsListChanged && len(ev.Updated) == 0 {
		return
	}
	if err := registry.ResourcesChanged.Publish(ctx, s.node.Client, ev); err != nil {
		s.log.Warn("publishing a resource change failed", "err", err)
	}
}

func sameResource(a, b pyhost.ResourceInfo) bool {
	return a.URI == b.URI && a.URITemplate == b.URITemplate && a.Name == b.Name && a.Title == b.Title &&
		a.Description == b.Description && a.MimeType == b.MimeType && string(a.Meta) == string(b.Meta)
}

func samePrompt(a, b registry.Prompt) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description && slices.Equal(a.Arguments, b.Arguments)
}
