//go:build linux

package ledger_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpx/mcpx-policy/internal/crashtest"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

func init() { childRoles["unsaved"] = unsavedChild }

// A fault makes every write of the ledger file fail while it is on, and
// stops doing so when it is turned off. Two kinds, so that the disk-full
// tests run wherever `go test` does:
//   - tmpfs: the state dir is on a small tmpfs that a filler file makes
//     full (ENOSPC), as a full disk is. Mounting needs root.
//   - fsize: the child's RLIMIT_FSIZE is set to 0 from outside (prlimit),
//     so each of its writes fails with EFBIG. Works for any user; the
//     other processes can still write, as they could on a disk that is
//     full for one writer's quota.
type fault interface {
	dir() string               // the state dir
	on(t *testing.T, pid int)  // writes of process pid (or of all) fail
	off(t *testing.T, pid int) // they succeed again
}

type tmpfsFault struct{ mnt string }

// newTmpfsFault mounts a 1 MiB tmpfs, or reports why it cannot.
func newTmpfsFault(t *testing.T) (*tmpfsFault, error) {
	mnt := t.TempDir()
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return &tmpfsFault{mnt: mnt}, nil
}

func (f *tmpfsFault) dir() string { return filepath.Join(f.mnt, "state") }

func (f *tmpfsFault) on(t *testing.T, _ int) {
	t.Helper()
	filler, err := os.OpenFile(filepath.Join(f.mnt, "filler"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer filler.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := filler.Write(chunk); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("filling the tmpfs: %v", err)
			}
			return
		}
	}
}

func (f *tmpfsFault) off(t *testing.T, _ int) {
	t.Helper()
	if err := os.Remove(filepath.Join(f.mnt, "filler")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}

type fsizeFault struct{ d string }

func (f *fsizeFault) dir() string { return f.d }

func (f *fsizeFault) on(t *testing.T, pid int) {
	t.Helper()
	setFsize(t, pid, 0)
}

func (f *fsizeFault) off(t *testing.T, pid int) {
	t.Helper()
	if unix.Kill(pid, 0) == nil { // a dead process has no limit to lift
		setFsize(t, pid, unix.RLIM_INFINITY)
	}
}

func setFsize(t *testing.T, pid int, cur uint64) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &old); err != nil {
		t.Fatal(err)
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: min(cur, old.Max), Max: old.Max}, nil); err != nil {
		t.Fatalf("prlimit %d RLIMIT_FSIZE: %v", pid, err)
	}
}

// faults runs fn once per kind of fault. The tmpfs kind is reported as
// skipped where mounting is not permitted; the fsize kind always runs.
func faults(t *testing.T, fn func(t *testing.T, f fault)) {
	t.Run("tmpfs", func(t *testing.T) {
		f, err := newTmpfsFault(t)
		if err != nil {
			t.Skipf("mounting a tmpfs is not permitted here (%v); the fsize variant covers the fault", err)
		}
		fn(t, f)
	})
	t.Run("fsize", func(t *testing.T) {
		fn(t, &fsizeFault{d: filepath.Join(t.TempDir(), "state")})
	})
}

// unsavedChild is the child role of TestUnsavedUnknownBlocksEveryProcess.
// It reads commands from stdin and answers on stdout:
//
//	begin    → "BEGUN <id>"                   a marker is durable
//	unknown  → "UNKNOWN <id> <error or ok>"   Unknown returned
//	check    → "SEES <self> <other>"          whether this Ledger and a
//	                                          second Ledger of this process
//	                                          count the write as an entry
func unsavedChild() {
	dir := os.Getenv(childDir)
	l, err := ledger.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	other, _ := ledger.Open(dir)
	var d *ledger.Dispatch
	sees := func(l *ledger.Ledger) string {
		es, err := l.Entries("srv")
		if err != nil {
			return "error:" + strings.ReplaceAll(err.Error(), " ", "_")
		}
		for _, e := range es {
			if e.ID == d.ID() {
				return "yes"
			}
		}
		return "no"
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "begin":
			if d, err = l.Begin("srv", "write", map[string]any{"n": 1}, "test"); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			d.Sent()
			fmt.Println("BEGUN", d.ID())
		case "unknown":
			res := "ok"
			if err := d.Unknown("timeout"); err != nil {
				res = err.Error()
			}
			fmt.Println("UNKNOWN", d.ID(), res)
		case "check":
			fmt.Println("SEES", sees(l), sees(other))
		}
	}
	os.Exit(0)
}

type child struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	err strings.Builder
}

func startChild(t *testing.T, role, dir string) *child {
	t.Helper()
	c := &child{cmd: crashtest.Command(childEnv+"="+role, childDir+"="+dir)}
	c.cmd.Stderr = &c.err
	var err error
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewReader(out)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
	return c
}

// ask sends a command and returns the answer's fields.
func (c *child) ask(t *testing.T, cmd string) []string {
	t.Helper()
	if _, err := fmt.Fprintln(c.in, cmd); err != nil {
		t.Fatal(err)
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: child said %q: %v\n%s", cmd, line, err, c.err.String())
	}
	return strings.SplitN(strings.TrimSpace(line), " ", 3)
}

func hasEntry(t *testing.T, l *ledger.Ledger, id string) bool {
	t.Helper()
	es, err := l.Entries("srv")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.ID == id {
			return true
		}
	}
	return false
}

// TestUnsavedUnknownBlocksEveryProcess: a write's outcome is lost while the
// ledger cannot be written. Its owner's Unknown fails; from that moment no
// process — this one, the owner, another Ledger in the owner's process —
// may allow a write to the server. Once the disk has room again, the owner
// saves the entry by itself (nothing else happens in it), and after its
// death the entry stays.
func TestUnsavedUnknownBlocksEveryProcess(t *testing.T) {
	t.Parallel()
	faults(t, func(t *testing.T, f fault) {
		c := startChild(t, "unsaved", f.dir())
		id := c.ask(t, "begin")[1]
		l := open(t, f.dir())
		if hasEntry(t, l, id) {
			t.Fatal("a write in flight counts as an unknown-outcome entry")
		}

		f.on(t, c.cmd.Process.Pid)
		got := c.ask(t, "unknown")
		if got[2] == "ok" {
			t.Fatalf("Unknown saved the entry although the ledger could not be written")
		}
		t.Logf("the owner's Unknown failed: %s", got[2])
		if raw := readRaw(t, f.dir()); len(raw.Entries) != 0 || len(raw.InFlight) != 1 {
			t.Fatalf("the file changed although it could not be written: %+v", raw)
		}
		if !hasEntry(t, l, id) {
			t.Fatal("another process allows writes to srv while the owner holds a write whose outcome is unknown")
		}
		if st, err := l.List(); err != nil || len(st.Entries) != 1 || len(st.InFlight) != 0 ||
			!strings.Contains(st.Entries[0].Cause, "could not save the entry yet") {
			t.Fatalf("List = %+v, %v; want the unsaved entry and nothing in flight", st, err)
		}
		if sees := c.ask(t, "check"); sees[1] != "yes" || sees[2] != "yes" {
			t.Fatalf("in the owner's process, the owner sees the entry: %s, another Ledger: %s", sees[1], sees[2])
		}

		// Room again: the owner saves the entry in the background.
		f.off(t, c.cmd.Process.Pid)
		deadline := time.Now().Add(15 * time.Second)
		for {
			raw := readRaw(t, f.dir())
			if len(raw.Entries) == 1 && raw.Entries[0].ID == id && raw.Entries[0].Cause == "timeout" && len(raw.InFlight) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the owner did not save the entry once the disk had room: %+v", raw)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !hasEntry(t, l, id) {
			t.Fatal("the saved entry does not block")
		}
		c.cmd.Process.Kill()
		c.cmd.Wait()
		if !hasEntry(t, l, id) {
			t.Fatal("the entry went with its owner")
		}
	})
}

// TestUnsavedUnknownDiesWithItsOwner: the owner dies before the disk has
// room again. Its slot lock goes with it, and its marker is a dead
// process's marker: still an entry, everywhere, and Recover saves it.
func TestUnsavedUnknownDiesWithItsOwner(t *testing.T) {
	t.Parallel()
	faults(t, func(t *testing.T, f fault) {
		c := startChild(t, "unsaved", f.dir())
		id := c.ask(t, "begin")[1]
		f.on(t, c.cmd.Process.Pid)
		if got := c.ask(t, "unknown"); got[2] == "ok" {
			t.Fatal("Unknown saved the entry although the ledger could not be written")
		}
		c.cmd.Process.Kill()
		c.cmd.Wait()
		f.off(t, c.cmd.Process.Pid)
		l := open(t, f.dir())
		if !hasEntry(t, l, id) {
			t.Fatal("the dead owner's unsaved unknown does not block")
		}
		if n, err := l.Recover(); err != nil || n != 1 {
			t.Fatalf("Recover = %d, %v; want 1", n, err)
		}
		raw := readRaw(t, f.dir())
		if len(raw.Entries) != 1 || raw.Entries[0].ID != id || len(raw.InFlight) != 0 {
			t.Fatalf("after Recover: %+v", raw)
		}
	})
}

// TestClearUnsavedUnknown: an operator clears an unknown outcome its owner
// could not save yet. The owner's late save must not bring it back, and
// the owner's own reads stop counting it.
func TestClearUnsavedUnknown(t *testing.T) {
	t.Parallel()
	t.Run("fsize", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		c := startChild(t, "unsaved", dir)
		id := c.ask(t, "begin")[1]
		setFsize(t, c.cmd.Process.Pid, 0)
		if got := c.ask(t, "unknown"); got[2] == "ok" {
			t.Fatal("Unknown saved the entry although the ledger could not be written")
		}
		l := open(t, dir)
		cleared, err := l.Clear("srv", id, "checked: it did not happen")
		if err != nil || len(cleared) != 1 || cleared[0].ID != id {
			t.Fatalf("Clear = %+v, %v", cleared, err)
		}
		setFsize(t, c.cmd.Process.Pid, unix.RLIM_INFINITY)
		deadline := time.Now().Add(15 * time.Second)
		for c.ask(t, "check")[1] != "no" {
			if time.Now().After(deadline) {
				t.Fatal("the owner still counts the cleared entry")
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(3 * time.Second) // past the retrier's longest wait
		raw := readRaw(t, dir)
		if len(raw.Entries) != 0 || len(raw.InFlight) != 0 || len(raw.Cleared) != 1 || raw.Cleared[0].ID != id {
			t.Fatalf("after the owner's late save: %+v", raw)
		}
		if hasEntry(t, l, id) {
			t.Fatal("the cleared entry still blocks")
		}
	})
}
