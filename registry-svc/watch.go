package registrysvc

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watcher calls reload once a burst of changes to the tool folders'
// Python files has settled (registry-svc/design.md "Hot reload").
type watcher struct {
	w    *fsnotify.Watcher
	done chan struct{}
}

func newWatcher(dirs []string, debounce time.Duration, log *slog.Logger, reload func()) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("creating the tool folder watch: %w", err)
	}
	for _, d := range dirs {
		if err := fw.Add(d); err != nil {
			log.Warn("tool folder cannot be watched; hot reload is off for it", "folder", d, "err", err)
		}
	}
	w := &watcher{w: fw, done: make(chan struct{})}
	go w.run(debounce, log, reload)
	return w, nil
}

func (w *watcher) run(debounce time.Duration, log *slog.Logger, reload func()) {
	defer close(w.done)
	timer := time.NewTimer(debounce)
	timer.Stop()
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				timer.Stop()
				return
			}
			if strings.HasSuffix(ev.Name, ".py") && ev.Op != fsnotify.Chmod {
				log.Debug("tool folder changed", "file", filepath.Base(ev.Name), "op", ev.Op.String())
				timer.Reset(debounce)
			}
		case err, ok := <-w.w.Errors:
			if !ok {
				timer.Stop()
				return
			}
			log.Warn("tool folder watch error", "err", err)
		case <-timer.C:
			reload()
		}
	}
}

// close stops the watch and waits for a reload in progress.
func (w *watcher) close() error {
	err := w.w.Close()
	<-w.done
	return err
}
