//go:build linux

package ledger_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// answer is what a decision reads of server "srv": the count and token of
// its entries, or the kind of error.
func answer(l *ledger.Ledger) string {
	p, err := l.Pending("srv", ledger.Listed)
	switch {
	case errors.Is(err, ledger.ErrUnsafe):
		return "unsafe"
	case errors.Is(err, ledger.ErrUnreadable):
		return "unreadable"
	case err != nil:
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%d %s", p.Total, p.Seen)
}

// srvLedger is a ledger file with one unknown-outcome entry for srv.
var srvLedger = []byte(`{"version": 1, "entries": [{"id": "x1", "server": "srv", "tool": "write_file", "args_sha256": "00", "time": "2026-01-01T00:00:00.000000000Z", "surface": "mcp"}], "cleared": [], "in_flight": []}` + "\n")

// heal makes dir and its files private again, and each name that is not
// a regular file one (the ledger file with srvLedger), so that the next
// change starts from a state dir a Ledger reads.
func heal(t *testing.T, dir string) {
	t.Helper()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ledger.FileName, "ledger.lock", "ledger.slots"} {
		p := filepath.Join(dir, name)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); errors.Is(err, unix.ENOENT) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			var b []byte
			if name == ledger.FileName {
				b = srvLedger
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// usable reports whether a fresh Ledger reads dir: a peer can write then.
func usable(t *testing.T, dir string) bool {
	t.Helper()
	l, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l.Check() == nil
}

// fastAnswer waits until l answers from its snapshot of the state dir (the
// directory has to be older than the timestamps' granularity first) and
// returns that answer.
func fastAnswer(t *testing.T, l *ledger.Ledger) string {
	t.Helper()
	for range 1000 {
		before := ledger.FastLoads(l)
		a := answer(l)
		if ledger.FastLoads(l) > before {
			return a
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no read of the ledger was answered from its snapshot in 10s")
	return ""
}

// TestSnapshotSeesEveryChange is the property that makes the read path's
// snapshot safe: whatever happens to the state dir between two decisions —
// another process records an unknown outcome, a file or the directory is
// made writable by others, a name is replaced by a symlink or a FIFO, the
// file is rewritten in place, the directory itself is replaced — the next
// read of a Ledger that answered from its snapshot answers what a fresh
// Ledger (no cache, every check by path) answers. Sequences of changes are
// generated (each change once, in a random order); each starts from a
// healed state dir and a read answered by the snapshot.
func TestSnapshotSeesEveryChange(t *testing.T) {
	type change struct {
		name string
		do   func(t *testing.T, dir string, peer *child)
	}
	path := func(dir, name string) string { return filepath.Join(dir, name) }
	chmod := func(name string, mode os.FileMode) func(*testing.T, string, *child) {
		return func(t *testing.T, dir string, _ *child) {
			p := dir
			if name != "" {
				p = path(dir, name)
			}
			if err := os.Chmod(p, mode); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
	}
	// replace renames what make creates at a temp name over name.
	replace := func(name string, make func(string) error) func(*testing.T, string, *child) {
		return func(t *testing.T, dir string, _ *child) {
			tmp := path(dir, "tmp-"+name)
			if err := make(tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyOf := func(dir, name string) func(string) error {
		return func(tmp string) error {
			b, err := os.ReadFile(path(dir, name))
			if errors.Is(err, os.ErrNotExist) {
				b = srvLedger
			} else if err != nil {
				return err
			}
			return os.WriteFile(tmp, b, 0o600)
		}
	}
	changes := []change{
		{"peer records an unknown outcome", func(t *testing.T, dir string, peer *child) {
			if !usable(t, dir) {
				return
			}
			if f := peer.ask(t, "begin"); f[0] != "BEGUN" {
				t.Fatal(f)
			}
			if f := peer.ask(t, "unknown"); f[0] != "UNKNOWN" || f[2] != "ok" {
				t.Fatal(f)
			}
		}},
		{"peer begins a write", func(t *testing.T, dir string, peer *child) {
			if !usable(t, dir) {
				return
			}
			if f := peer.ask(t, "begin"); f[0] != "BEGUN" {
				t.Fatal(f)
			}
		}},
		{"ledger file made writable by others", chmod(ledger.FileName, 0o666)},
		{"ledger file made private", chmod(ledger.FileName, 0o600)},
		{"lock file made group-writable", chmod("ledger.lock", 0o620)},
		{"lock file made private", chmod("ledger.lock", 0o600)},
		{"slot file made world-writable", chmod("ledger.slots", 0o606)},
		{"slot file made private", chmod("ledger.slots", 0o600)},
		{"state dir made writable by others", chmod("", 0o777)},
		{"state dir made private", chmod("", 0o700)},
		{"ledger file replaced by a symlink", func(t *testing.T, dir string, p *child) {
			keep := path(dir, "kept.json")
			if err := copyOf(dir, ledger.FileName)(keep); err != nil {
				t.Fatal(err)
			}
			replace(ledger.FileName, func(tmp string) error { return os.Symlink(keep, tmp) })(t, dir, p)
		}},
		{"lock file replaced by a FIFO", replace("ledger.lock", func(tmp string) error { return unix.Mkfifo(tmp, 0o600) })},
		{"ledger file replaced by a regular one", func(t *testing.T, dir string, p *child) {
			replace(ledger.FileName, copyOf(dir, "kept.json"))(t, dir, p)
		}},
		{"slot file replaced by a FIFO", replace("ledger.slots", func(tmp string) error { return unix.Mkfifo(tmp, 0o600) })},
		{"slot file replaced by a symlink", func(t *testing.T, dir string, p *child) {
			keep := path(dir, "kept.slots")
			if err := os.WriteFile(keep, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			replace("ledger.slots", func(tmp string) error { return os.Symlink(keep, tmp) })(t, dir, p)
		}},
		{"lock file replaced by a regular one", replace("ledger.lock", func(tmp string) error { return os.WriteFile(tmp, nil, 0o600) })},
		{"ledger file rewritten in place", func(t *testing.T, dir string, _ *child) {
			f, err := os.OpenFile(path(dir, ledger.FileName), os.O_WRONLY|os.O_TRUNC|unix.O_NOFOLLOW, 0)
			if err != nil {
				return // not a regular file now: nothing to rewrite
			}
			defer f.Close()
			if _, err := f.Write(srvLedger); err != nil {
				t.Fatal(err)
			}
		}},
		{"ledger file removed", func(t *testing.T, dir string, _ *child) {
			if err := os.Remove(path(dir, ledger.FileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}},
		{"state dir replaced", func(t *testing.T, dir string, _ *child) {
			old := dir + ".old"
			if err := os.Rename(dir, old); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(old)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.Type().IsRegular() {
					if err := copyOf(old, e.Name())(path(dir, e.Name())); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := os.RemoveAll(old); err != nil {
				t.Fatal(err)
			}
		}},
	}
	seqs := 2 // each runs every change once, in its own order
	if os.Getenv("MCPX_POLICY_TEST_FULL") != "" {
		seqs = 8
	}
	for seq := range seqs {
		t.Run(fmt.Sprint(seq), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(seq), 28))
			dir := filepath.Join(t.TempDir(), "state")
			peer := startChild(t, "unsaved", dir)
			changes[0].do(t, dir, peer) // the dir and all three files exist
			l, err := ledger.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			for step, i := range rng.Perm(len(changes)) {
				heal(t, dir)
				before := fastAnswer(t, l)
				c := changes[i]
				c.do(t, dir, peer)
				fresh, err := ledger.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				want := answer(fresh)
				if got := answer(l); got != want {
					t.Fatalf("step %d, after %q (before it: %s): the ledger reads %q, a fresh one %q", step, c.name, before, got, want)
				}
				t.Logf("step %d: %s: %s -> %s", step, c.name, before, want)
			}
		})
	}
}
