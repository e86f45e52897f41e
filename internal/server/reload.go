package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
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

// DefaultDebounce is the quiet period: how long Watch waits after the last
// change before it reloads, so an editor's write-rename-chmod burst is one
// reload, and how long the files' contents must then stay the same.
const DefaultDebounce = 200 * time.Millisecond

// Watcher watches a config's files: their directories (editors replace a
// file by renaming over it, which a watch on the file itself loses) plus
// conf.d beside the first file. Made before the config is read (serve and
// the proxy make it before they load), it sees every change from then on:
// one saved while the config loads is reloaded as any other.
type Watcher struct {
	w       *fsnotify.Watcher
	watched map[string]bool
	order   []string
	confd   string
}

// NewWatcher starts watching files. Run it, or Close it.
func NewWatcher(files []string) (*Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	cw := &Watcher{w: w, watched: map[string]bool{}}
	dirs := map[string]bool{}
	for i, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			w.Close()
			return nil, err
		}
		if !cw.watched[abs] {
			cw.order = append(cw.order, abs)
		}
		cw.watched[abs] = true
		dirs[filepath.Dir(abs)] = true
		if i == 0 {
			cw.confd = filepath.Join(filepath.Dir(abs), "conf.d")
		}
	}
	for d := range dirs {
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, err
		}
	}
	if cw.confd != "" {
		_ = w.Add(cw.confd)
	}
	return cw, nil
}

// Close stops watching (Run closes the watcher when it returns); a nil
// Watcher (none could be made) has nothing to close.
func (cw *Watcher) Close() error {
	if cw == nil {
		return nil
	}
	return cw.w.Close()
}

// Run reloads r when one of the watched files changes or a value arrives
// on hup, until ctx ends. It reacts to events on the files and on
// conf.d/*.yaml only.
//
// A reload waits until the files are stable: after the quiet period it
// hashes every watched file and waits another quiet period, again and
// again while the contents change, so a file being written is never
// loaded half-way. (A file an editor truncated and left empty for longer
// than that is stable, but has no version key and fails to load.)
//
// A reload that fails keeps the old policy and logs the error; one that
// succeeds logs the new revision and every warning of the config (such as
// a setting a later layer loosened). Each reload result is also sent to
// done when it is non-nil (tests wait on it).
func (cw *Watcher) Run(ctx context.Context, r Reloader, hup <-chan struct{}, log *slog.Logger, done chan<- error) error {
	w, watched, order, confd := cw.w, cw.watched, cw.order, cw.confd
	defer w.Close()
	relevant := func(name string) bool {
		abs, err := filepath.Abs(name)
		if err != nil {
			return false
		}
		if watched[abs] || abs == confd {
			return true
		}
		return filepath.Dir(abs) == confd && confdFile(abs)
	}
	var timer <-chan time.Time
	why := ""
	settled := "" // the files' hash at the start of the quiet period
	reload := func() {
		old := r.Revision()
		err := r.Reload(ctx)
		if err != nil {
			log.Error("config reload failed; still deciding with the old policy", "why", why, "revision", old, "err", err)
		} else {
			if rev := r.Revision(); rev != old {
				log.Info("config reloaded", "why", why, "revision", rev, "previous", old)
			} else {
				log.Info("config reloaded, unchanged", "why", why, "revision", rev)
			}
			for _, w := range r.Warnings() {
				log.Warn("config warning", "warning", w)
			}
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
			if why == "" {
				why = "file changed"
			}
			timer = time.After(DefaultDebounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			log.Warn("config watch", "err", err)
		case <-timer:
			sum := hashFiles(order, confd)
			if sum != settled {
				// Changed during the quiet period (or the first look):
				// wait for one more in which it does not.
				settled = sum
				timer = time.After(DefaultDebounce)
				continue
			}
			timer, settled = nil, ""
			reload()
			why = ""
		case <-hup:
			why = "SIGHUP"
			timer = time.After(0)
		}
	}
}

// confdFile reports whether a conf.d entry is one Watch reacts to.
func confdFile(name string) bool {
	ext := filepath.Ext(name)
	return ext == ".yaml" || ext == ".yml"
}

// hashLimit bounds what hashFiles reads of one file (a path may name
// something endless, such as a device): far above any file the config's
// limits let load.
const hashLimit = 64 << 20

// hashFiles hashes the contents of files and of conf.d's YAML files, in a
// fixed order, each up to hashLimit bytes. A file that cannot be read hashes as its error, so a file
// that appears, disappears or becomes readable changes the hash too.
func hashFiles(files []string, confd string) string {
	h := sha256.New()
	add := func(name string) {
		io.WriteString(h, name)
		h.Write([]byte{0})
		f, err := os.Open(name)
		if err == nil {
			_, err = io.CopyN(h, f, hashLimit)
			if errors.Is(err, io.EOF) {
				err = nil
			}
			f.Close()
		}
		if err != nil {
			fmt.Fprintf(h, "\x00error: %v", err)
		}
		h.Write([]byte{0})
	}
	for _, f := range files {
		add(f)
	}
	if confd != "" {
		entries, err := os.ReadDir(confd)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(h, "conf.d error: %v", err)
		}
		for _, e := range entries { // ReadDir sorts by name
			if !e.IsDir() && confdFile(e.Name()) {
				add(filepath.Join(confd, e.Name()))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
