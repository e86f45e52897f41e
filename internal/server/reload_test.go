package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/server"
)

// strictConfig denies every call the reload tests make: a read by an
// argument rule, a hidden tool, and a write by writePolicy. An empty
// config would allow the read and ask for the other two.
const strictConfig = `version: 1
servers:
  fs:
    writePolicy: deny
    hiddenTools: ["move_*"]
    argumentRules:
      - id: reads-in-workspace
        tools: [read_file]
        schema:
          properties:
            path: {type: string, pattern: "^/workspace/"}
`

func strictEngine(t *testing.T, conf string) *mcpxpolicy.Engine {
	t.Helper()
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(filepath.Dir(conf), "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

var strictCalls = []decision.Call{
	{Server: "fs", Tool: decision.Tool{Name: "read_file", Annotations: &decision.Annotations{ReadOnlyHint: ptr(true)}}, Args: map[string]any{"path": "/etc/shadow"}},
	{Server: "fs", Tool: decision.Tool{Name: "move_file", Annotations: &decision.Annotations{ReadOnlyHint: ptr(false)}}, Args: map[string]any{}},
	{Server: "fs", Tool: decision.Tool{Name: "write_file", Annotations: &decision.Annotations{ReadOnlyHint: ptr(false)}}, Args: map[string]any{"path": "/workspace/a"}},
}

func ptr[T any](v T) *T { return &v }

// hammer decides strictCalls in a loop until stop is closed and counts the
// decisions that were not a deny.
func hammer(t *testing.T, eng *mcpxpolicy.Engine, stop <-chan struct{}) (wait func() (decisions, loose int64)) {
	var n, bad atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c := strictCalls[i%len(strictCalls)]
				d, _ := eng.Decide(context.Background(), c)
				n.Add(1)
				if d.Outcome != decision.Deny {
					if bad.Add(1) == 1 {
						t.Errorf("%s.%s decided %s while the config was being rewritten: %v", c.Server, c.Tool.Name, d.Outcome, d.Reasons)
					}
				}
			}
		}()
	}
	return func() (int64, int64) {
		wg.Wait()
		return n.Load(), bad.Load()
	}
}

// waitOK waits for a reload that succeeds, passing over failed ones.
func waitOK(t *testing.T, done <-chan error) (failed int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case err := <-done:
			if err == nil {
				return failed
			}
			failed++
		case <-deadline:
			t.Fatal("no successful reload within 20s")
		}
	}
}

// TestReloadNeverLoadsATruncatedFile: an editor truncates the config, pauses
// longer than the quiet period, then writes the whole new file. No decision
// is ever made on the empty revision: the watcher keeps the old policy
// (the empty file fails to load), then loads the new one.
func TestReloadNeverLoadsATruncatedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(strictConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	eng := strictEngine(t, conf)
	old := eng.Revision()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 8)
	watcher, err := server.NewWatcher([]string{conf})
	if err != nil {
		t.Fatal(err)
	}
	go watcher.Run(ctx, eng, nil, slog.New(slog.DiscardHandler), done)

	stop := make(chan struct{})
	wait := hammer(t, eng, stop)
	// The editor: open with O_TRUNC, think for five quiet periods, write.
	f, err := os.OpenFile(conf, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * server.DefaultDebounce)
	if eng.Revision() != old {
		t.Error("the policy changed while the file was empty")
	}
	next := strictConfig + "    writeTools: [exec_*]\n"
	if _, err := f.WriteString(next); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	failed := waitOK(t, done)
	close(stop)
	n, loose := wait()
	t.Logf("%d decisions, %d reloads refused, then one loaded", n, failed)
	if eng.Revision() == old {
		t.Error("the new file was not loaded")
	}
	if loose > 0 {
		t.Errorf("%d of %d decisions were not deny", loose, n)
	}
}

// TestReloadWaitsForStableFiles: a reload (here one asked for by SIGHUP)
// waits until the files' contents stay the same for a quiet period: while a
// file keeps changing, nothing is loaded. The config is a symlink to a file
// in another folder, as with a mounted ConfigMap, so the writes raise no
// event in the watched folder and only the contents tell.
func TestReloadWaitsForStableFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "data", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte(strictConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "etc", "mcpx-policy.yaml")
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, conf); err != nil {
		t.Fatal(err)
	}
	eng := strictEngine(t, conf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 8)
	hup := make(chan struct{}, 1)
	watcher, err := server.NewWatcher([]string{conf})
	if err != nil {
		t.Fatal(err)
	}
	go watcher.Run(ctx, eng, hup, slog.New(slog.DiscardHandler), done)
	time.Sleep(100 * time.Millisecond)

	// A writer replaces the file every 20 ms for 15 quiet periods, each
	// time with a whole, valid config of its own; SIGHUP arrives while it
	// writes.
	var stopped atomic.Bool
	writer := make(chan struct{})
	write := func(content string) {
		tmp := real + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Error(err)
		}
		if err := os.Rename(tmp, real); err != nil {
			t.Error(err)
		}
	}
	go func() {
		defer close(writer)
		end := time.Now().Add(15 * server.DefaultDebounce)
		for i := 0; time.Now().Before(end); i++ {
			write(fmt.Sprintf("%s# edit %d\n", strictConfig, i))
			time.Sleep(20 * time.Millisecond)
		}
		write(strictConfig + "# final\n")
		stopped.Store(true)
	}()
	defer func() { <-writer }()
	time.Sleep(2 * server.DefaultDebounce)
	hup <- struct{}{}
	select {
	case err := <-done:
		if !stopped.Load() {
			t.Fatalf("reloaded (err %v) while the file was still being written", err)
		}
		if err != nil {
			t.Fatalf("reload of the final file: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no reload within 20s")
	}
}

// syncBuffer is a log the test reads while Watch writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestReloadLogsLoosening: a reload logs every setting a later layer made
// less strict, with both values and both origins, as the start does.
func TestReloadLogsLoosening(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(strictConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "conf.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	eng := strictEngine(t, conf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 8)
	log := &syncBuffer{}
	watcher, err := server.NewWatcher([]string{conf})
	if err != nil {
		t.Fatal(err)
	}
	go watcher.Run(ctx, eng, nil, slog.New(slog.NewTextHandler(log, nil)), done)
	time.Sleep(100 * time.Millisecond)
	dev := filepath.Join(dir, "conf.d", "50-dev.yaml")
	if err := os.WriteFile(dev, []byte("version: 1\nservers:\n  fs:\n    writePolicy: allow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitOK(t, done)
	want := fmt.Sprintf("%s:4: servers.fs.writePolicy: loosened from deny (%s:4) to allow by a later layer", dev, conf)
	if !strings.Contains(log.String(), "config warning") || !strings.Contains(log.String(), want) {
		t.Errorf("reload log lacks %q:\n%s", want, log.String())
	}
}

// TestWatcherSeesAChangeMadeWhileLoading: serve and the proxy make the
// Watcher before they read the config; a change made after that and
// before the watch runs (while the engine loads) is reloaded, not missed
// until the next change.
func TestWatcherSeesAChangeMadeWhileLoading(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(strictConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	watcher, err := server.NewWatcher([]string{conf})
	if err != nil {
		t.Fatal(err)
	}
	eng := strictEngine(t, conf)
	old := eng.Revision()
	// an editor's save while the engine loaded: a new file renamed over it
	tmp := conf + ".tmp"
	if err := os.WriteFile(tmp, []byte(strictConfig+"    writeTools: [exec_*]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, conf); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go watcher.Run(ctx, eng, nil, slog.New(slog.DiscardHandler), done)
	select {
	case err := <-done:
		if err != nil || eng.Revision() == old {
			t.Fatalf("the reload of the change made while loading: %v, revision %s (old %s)", err, eng.Revision(), old)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a change made between the watch's start and its run was never reloaded")
	}
}
