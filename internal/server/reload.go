package server

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Reloader is what Watch reloads: *mcpxpolicy.Engine.
type Reloader interface {
	Reload(ctx context.Context) error
	Revision() string
	Warnings() []string
}

// DefaultDebounce is how long Watch waits after the last change before it
// reloads, so an editor's write-rename-chmod burst is one reload.
const DefaultDebounce = 200 * time.Millisecond

// Watch reloads r when one of files changes or a value arrives on hup,
// until ctx ends. It watches the files' directories (editors replace a
// file by renaming over it, which a watch on the file itself loses) plus
// conf.d beside the first file, and reacts to events on those files and
// on conf.d/*.yaml only. A reload that fails keeps the old policy and
// logs the error; one that succeeds logs the new revision. Each reload
// result is also sent to done when it is non-nil (tests wait on it).
func Watch(ctx context.Context, r Reloader, files []string, hup <-chan struct{}, log *slog.Logger, done chan<- error) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	watched := map[string]bool{}
	dirs := map[string]bool{}
	var confd string
	for i, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return err
		}
		watched[abs] = true
		dirs[filepath.Dir(abs)] = true
		if i == 0 {
			confd = filepath.Join(filepath.Dir(abs), "conf.d")
		}
	}
	for d := range dirs {
		if err := w.Add(d); err != nil {
			return err
		}
	}
	if confd != "" {
		// conf.d is optional; a missing one is not watched.
		_ = w.Add(confd)
	}
	relevant := func(name string) bool {
		abs, err := filepath.Abs(name)
		if err != nil {
			return false
		}
		if watched[abs] || abs == confd {
			return true
		}
		ext := filepath.Ext(abs)
		return filepath.Dir(abs) == confd && (ext == ".yaml" || ext == ".yml")
	}
	var timer <-chan time.Time
	reload := func(why string) {
		old := r.Revision()
		err := r.Reload(ctx)
		if err != nil {
			log.Error("config reload failed; still deciding with the old policy", "why", why, "revision", old, "err", err)
		} else if rev := r.Revision(); rev != old {
			log.Info("config reloaded", "why", why, "revision", rev, "previous", old)
			for _, w := range r.Warnings() {
				log.Warn("config warning", "warning", w)
			}
		} else {
			log.Info("config reloaded, unchanged", "why", why, "revision", rev)
		}
		if done != nil {
			done <- err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if !relevant(ev.Name) || ev.Op == fsnotify.Chmod {
				continue
			}
			if ev.Name == confd && ev.Op.Has(fsnotify.Create) {
				_ = w.Add(confd)
			}
			timer = time.After(DefaultDebounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			log.Warn("config watch", "err", err)
		case <-timer:
			timer = nil
			reload("file changed")
		case <-hup:
			reload("SIGHUP")
		}
	}
}
