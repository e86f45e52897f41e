//go:build linux

package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/internal/ledger"
)

func init() { childRoles["hostile"] = hostileChild }

// otherUID owns what "another user" owns in these tests.
const otherUID = 65534

// pendingLedger is a ledger file with one unknown-outcome entry for fs.
var pendingLedger = []byte(`{"version": 1, "entries": [{"id": "e1", "server": "fs", "tool": "write_file", "args_sha256": "00", "time": "2026-01-01T00:00:00.000000000Z", "surface": "mcp"}], "cleared": [], "in_flight": []}` + "\n")

// snapshot is what a hostile-state test checks is left alone: each name's
// lstat mode, owner, link target and content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s mode=%o uid=%d", e.Name(), st.Mode, st.Uid)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			to, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", to)
		case unix.S_IFREG:
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %q", c)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestHostileStateDir: a state dir, ledger, lock or slot file that others
// may write, or that is not a regular file, is refused by every read and
// every change with an *UnreadableError that says what to fix, and nothing
// in the directory is touched — in particular a link is never replaced.
func TestHostileStateDir(t *testing.T) {
	t.Parallel()
	file := func(dir string) string { return filepath.Join(dir, ledger.FileName) }
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		asRoot bool // chown needs root
		unsafe bool // errors.Is(err, ErrUnsafe)
		hint   string
		setup  func(t *testing.T, dir string)
	}{
		{"dir-world-writable", false, true, "chmod 700 <dir>", func(t *testing.T, dir string) {
			must(t, os.Chmod(dir, 0o777))
		}},
		{"dir-group-writable", false, true, "chmod 700 <dir>", func(t *testing.T, dir string) {
			must(t, os.Chmod(dir, 0o770))
		}},
		{"dir-of-another-user", true, true, "chown", func(t *testing.T, dir string) {
			must(t, os.Chown(dir, otherUID, otherUID))
		}},
		{"ledger-of-another-user", true, true, "chown", func(t *testing.T, dir string) {
			must(t, os.Chown(file(dir), otherUID, otherUID))
		}},
		{"ledger-writable-by-others", false, true, "chmod 600 <dir>/ledger.json", func(t *testing.T, dir string) {
			must(t, os.Chmod(file(dir), 0o666))
		}},
		// The finding: with a world-writable state dir, another user
		// renamed an empty ledger over ledger.json and the pending entry
		// vanished.
		{"empty-ledger-renamed-over-by-another-user", true, true, "chmod 700 <dir>", func(t *testing.T, dir string) {
			must(t, os.Chmod(dir, 0o777))
			evil := filepath.Join(dir, "evil")
			must(t, os.WriteFile(evil, []byte(`{"version": 1, "entries": []}`), 0o600))
			must(t, os.Chown(evil, otherUID, otherUID))
			must(t, os.Rename(evil, file(dir)))
		}},
		{"ledger-symlink-to-a-file", false, false, "move it aside", func(t *testing.T, dir string) {
			real := filepath.Join(t.TempDir(), "real.json")
			must(t, os.Rename(file(dir), real))
			must(t, os.Symlink(real, file(dir)))
		}},
		{"lock-symlink", false, false, "move it aside", func(t *testing.T, dir string) {
			target := filepath.Join(t.TempDir(), "precious")
			must(t, os.WriteFile(target, []byte("keep me"), 0o600))
			must(t, os.Symlink(target, filepath.Join(dir, "ledger.lock")))
		}},
		{"lock-fifo", false, false, "move it aside", func(t *testing.T, dir string) {
			must(t, unix.Mkfifo(filepath.Join(dir, "ledger.lock"), 0o600))
		}},
		{"lock-of-another-user", true, true, "chown", func(t *testing.T, dir string) {
			lock := filepath.Join(dir, "ledger.lock")
			must(t, os.WriteFile(lock, nil, 0o600))
			must(t, os.Chown(lock, otherUID, otherUID))
		}},
		{"slots-fifo", false, false, "move it aside", func(t *testing.T, dir string) {
			must(t, unix.Mkfifo(filepath.Join(dir, "ledger.slots"), 0o600))
		}},
		{"slots-writable-by-others", false, true, "chmod 600 <dir>/ledger.slots", func(t *testing.T, dir string) {
			slots := filepath.Join(dir, "ledger.slots")
			must(t, os.WriteFile(slots, nil, 0o600))
			must(t, os.Chmod(slots, 0o666))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.asRoot && os.Geteuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			dir := filepath.Join(t.TempDir(), "state")
			must(t, os.Mkdir(dir, 0o700))
			must(t, os.WriteFile(file(dir), pendingLedger, 0o600))
			tc.setup(t, dir)
			before := snapshot(t, dir)
			l := open(t, dir)
			check := func(what string, err error) {
				t.Helper()
				var ue *ledger.UnreadableError
				if !errors.As(err, &ue) || !errors.Is(err, ledger.ErrUnreadable) {
					t.Fatalf("%s: err = %v; want an *UnreadableError (writes to every server blocked)", what, err)
				}
				if errors.Is(err, ledger.ErrUnsafe) != tc.unsafe {
					t.Errorf("%s: errors.Is(err, ErrUnsafe) = %v, want %v: %v", what, !tc.unsafe, tc.unsafe, err)
				}
				if want := strings.ReplaceAll(tc.hint, "<dir>", dir); !strings.Contains(ue.Hint, want) {
					t.Errorf("%s: hint %q does not say %q (error: %v)", what, ue.Hint, want, err)
				}
			}
			_, err := l.Entries("fs")
			check("Entries", err)
			_, err = l.Pending("fs", 10)
			check("Pending", err)
			_, err = l.List()
			check("List", err)
			d, err := l.Begin("fs", "w", nil, "")
			check("Begin", err)
			if d != nil {
				t.Error("Begin returned a dispatch")
			}
			_, err = l.Clear("fs", "", "x")
			check("Clear", err)
			_, err = l.Recover()
			check("Recover", err)
			if after := snapshot(t, dir); after != before {
				t.Errorf("the state dir changed:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// TestLedgerAboveTheCap: a ledger file above MaxFileSize is unreadable
// without being read into memory.
func TestLedgerAboveTheCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, ledger.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(ledger.MaxFileSize + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	_, err = open(t, dir).Entries("fs")
	var ue *ledger.UnreadableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "above the cap of 64 MiB") || !strings.Contains(ue.Hint, "archive") {
		t.Fatalf("err = %v; want an *UnreadableError naming the cap, with a hint", err)
	}
}

// hostileChild is the child role of TestHostileLedgerFileNeverBlocks: it
// caps its address space at 1 GiB above what it has mapped already (the
// race detector maps terabytes up front), then tries every read and change
// and prints one line each: "<op> unreadable" or "<op> <what happened>".
func hostileChild() {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Println("status", err)
		os.Exit(2)
	}
	var vmKB uint64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmSize:"); ok {
			fmt.Sscan(v, &vmKB)
		}
	}
	limit := vmKB<<10 + 1<<30
	if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: limit, Max: limit}); err != nil || vmKB == 0 {
		fmt.Println("setrlimit", vmKB, err)
		os.Exit(2)
	}
	l, err := ledger.Open(os.Getenv(childDir))
	if err != nil {
		fmt.Println("open", err)
		os.Exit(2)
	}
	say := func(op string, err error) {
		if errors.Is(err, ledger.ErrUnreadable) {
			fmt.Println(op, "unreadable")
		} else {
			fmt.Println(op, "err:", err)
		}
	}
	_, err = l.Entries("fs")
	say("entries", err)
	_, err = l.List()
	say("list", err)
	_, err = l.Begin("fs", "w", nil, "")
	say("begin", err)
	_, err = l.Clear("fs", "", "x")
	say("clear", err)
	os.Exit(0)
}

// TestHostileLedgerFileNeverBlocks: ledger.json is a link to /dev/zero, a
// named pipe, or a device. Each would make a naive reader allocate without
// end or block forever; here the child doing the reads runs with a memory
// cap and a deadline, so such a regression fails the test instead of
// hanging it or exhausting the machine.
func TestHostileLedgerFileNeverBlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		asRoot bool
		setup  func(path string) error
	}{
		{"symlink-to-dev-zero", false, func(path string) error { return os.Symlink("/dev/zero", path) }},
		{"fifo", false, func(path string) error { return unix.Mkfifo(path, 0o600) }},
		{"char-device-zero", true, func(path string) error { return unix.Mknod(path, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 5))) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.asRoot && os.Geteuid() != 0 {
				t.Skip("mknod needs root")
			}
			dir := t.TempDir()
			path := filepath.Join(dir, ledger.FileName)
			if err := tc.setup(path); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=hostile", childDir+"="+dir)
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("the ledger's reads hung on %s (killed after 20s); they said:\n%s", tc.name, out.String())
			}
			if err != nil {
				t.Fatalf("the child failed on %s: %v\n%s\n%s", tc.name, err, out.String(), lastLines(stderr.String(), 5))
			}
			want := "entries unreadable\nlist unreadable\nbegin unreadable\nclear unreadable\n"
			if out.String() != want {
				t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
			}
			var st unix.Stat_t
			if err := unix.Lstat(path, &st); err != nil {
				t.Fatal(err)
			}
			if ok := map[string]uint32{"symlink-to-dev-zero": unix.S_IFLNK, "fifo": unix.S_IFIFO, "char-device-zero": unix.S_IFCHR}[tc.name]; st.Mode&unix.S_IFMT != ok {
				t.Fatalf("%s was replaced (mode %o)", path, st.Mode)
			}
		})
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
