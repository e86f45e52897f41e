package trust_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/trust"
	"golang.org/x/sys/unix"
)

// TestTrustedFiles: a file an operator trusts is read only when it is a
// regular file that nobody but its owner — this process's user or root —
// may write; one holding a secret that other users may read is read and
// said (a root-owned secret may be group-readable); a folder of such files
// only when nobody else may add to it. Each refusal names the file and says
// what to do; a FIFO never blocks the read.
func TestTrustedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	root := os.Geteuid() == 0
	cases := []struct {
		name   string
		path   string
		trust  trust.Trust
		want   error // nil: read
		text   string
		rootOK bool // passes only when the file is root's (the test runs as root)
	}{
		{"config 0644", file("c644", 0o644), trust.Config, nil, "", false},
		{"config 0600", file("c600", 0o600), trust.Config, nil, "", false},
		{"config group-writable", file("c664", 0o664), trust.Config, trust.ErrUnsafe, "is writable by group or others (mode 0664)", false},
		{"config world-writable", file("c666", 0o666), trust.Config, trust.ErrUnsafe, "chmod go-w", false},
		{"secret 0600", file("s600", 0o600), trust.Secret, nil, "", false},
		{"secret 0400", file("s400", 0o400), trust.Secret, nil, "", false},

		{"secret group-writable", file("s620", 0o620), trust.Secret, trust.ErrUnsafe, "writable by group or others", false},
		{"a directory", dir, trust.Config, trust.ErrNotRegular, "is a directory, not a regular file", false},
		{"missing", filepath.Join(dir, "nope"), trust.Secret, os.ErrNotExist, "no such file", false},
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, struct {
		name   string
		path   string
		trust  trust.Trust
		want   error
		text   string
		rootOK bool
	}{"a FIFO", fifo, trust.Secret, trust.ErrNotRegular, "is a named pipe", false})
	for _, c := range cases {
		b, _, err := trust.ReadTrusted(c.path, c.trust, 1<<10)
		want := c.want
		if c.rootOK && root {
			want = nil
		}
		switch {
		case want == nil && (err != nil || string(b) != "x"):
			t.Errorf("%s: %q, %v; want it read", c.name, b, err)
		case want != nil && (!errors.Is(err, want) || !strings.Contains(err.Error()+hint(err), c.text) || !strings.Contains(err.Error(), c.path)):
			t.Errorf("%s: %v (hint %q); want %v saying %q and naming the file", c.name, err, hint(err), want, c.text)
		}
	}

	// A secret other users may read is read, and said: others-readable
	// always, group-readable unless root owns it.
	for _, c := range []struct {
		mode    os.FileMode
		exposed bool
	}{{0o600, false}, {0o400, false}, {0o644, true}, {0o604, true}, {0o640, !root}} {
		p := file("secret", c.mode)
		b, exposed, err := trust.ReadTrusted(p, trust.Secret, 1<<10)
		if err != nil || string(b) != "x" || (exposed != "") != c.exposed ||
			(c.exposed && !strings.Contains(exposed, p+" holds a secret and other users may read it") || c.exposed && !strings.Contains(exposed, "chmod 600 "+p)) {
			t.Errorf("secret %04o: %q, %q, %v; want it read, exposed %v", c.mode, b, exposed, err, c.exposed)
		}
		if _, exposed, _ := trust.ReadTrusted(p, trust.Config, 1<<10); exposed != "" {
			t.Errorf("a config file %04o is said to hold a secret: %s", c.mode, exposed)
		}
		os.Remove(p)
	}

	// Owned by another user: refused; by root: read (the test needs root
	// to give a file away).
	if root {
		other := file("other", 0o600)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, _, err := trust.ReadTrusted(other, trust.Config, 1<<10); !errors.Is(err, trust.ErrUnsafe) || !strings.Contains(err.Error(), "owned by uid 65534") {
			t.Errorf("a file of another user: %v", err)
		}
	}

	// Folders: others may not add a file.
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o755, true}, {0o700, true}, {0o775, false}, {0o777, false}, {0o1777, false}} {
		d := filepath.Join(t.TempDir(), "conf.d")
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, c.mode); err != nil {
			t.Fatal(err)
		}
		ok, err := trust.CheckTrustedDir(d)
		if c.ok != (err == nil) || (err == nil && !ok) || (err != nil && !errors.Is(err, trust.ErrUnsafe)) {
			t.Errorf("folder %04o: %v, %v", c.mode, ok, err)
		}
	}
	if ok, err := trust.CheckTrustedDir(filepath.Join(dir, "none")); ok || err != nil {
		t.Errorf("a missing folder: %v, %v", ok, err)
	}
}

func hint(err error) string {
	var se *trust.Error
	if errors.As(err, &se) {
		return se.Hint
	}
	return ""
}
