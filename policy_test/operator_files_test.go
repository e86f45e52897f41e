package policy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOperatorFilesAreChecked: every file an operator trusts — the serve
// token, a bundle signing key, the config files and their conf.d folder,
// override Rego, a tool catalog, the ledger's DSN file — gets the checks
// the state dir's files get, through the built binary: one other users
// may write, one another user owns, a FIFO or a folder in its place, and
// a missing or empty key, each make the command fail with the file named
// and what to do (never a hang on the FIFO, never a bundle signed with
// something else); a secret other users may read is a warning saying so;
// the same file made right is used.
func TestOperatorFilesAreChecked(t *testing.T) {
	t.Parallel()
	root := os.Geteuid() == 0
	type fault struct {
		name string
		make func(t *testing.T, path string) // turns a good file at path bad
		want string                          // in stderr
		root bool                            // needs root to make
		warn bool                            // said, not refused: the command does what it did
	}
	chmod := func(mode os.FileMode) func(*testing.T, string) {
		return func(t *testing.T, p string) {
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	giveAway := func(t *testing.T, p string) {
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	fifo := func(t *testing.T, p string) {
		os.Remove(p)
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	folder := func(t *testing.T, p string) {
		os.Remove(p)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	missing := func(t *testing.T, p string) { os.Remove(p) }
	empty := func(t *testing.T, p string) {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	secretFaults := []fault{
		{"world-readable", chmod(0o644), "holds a secret and other users may read it (mode 0644)", false, true},
		{"group-writable", chmod(0o660), "writable by group or others (mode 0660)", false, false},
		{"another user's", giveAway, "is owned by uid 65534", true, false},
		{"a FIFO", fifo, "is a named pipe, not a regular file", false, false},
		{"a folder", folder, "is a directory, not a regular file", false, false},
		{"missing", missing, "no such file or directory", false, false},
	}
	configFaults := []fault{
		{"world-writable", chmod(0o666), "writable by group or others (mode 0666)", false, false},
		{"group-writable", chmod(0o620), "writable by group or others (mode 0620)", false, false},
		{"another user's", giveAway, "is owned by uid 65534", true, false},
		{"a FIFO", fifo, "is a named pipe, not a regular file", false, false},
	}
	// run runs the binary in dir with a deadline a FIFO that blocked it
	// would pass: its exit code and stderr.
	run := func(t *testing.T, dir string, args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "mcpx-policy"), args...)
		cmd.Dir, cmd.Env = dir, cleanEnv()
		var errb strings.Builder
		cmd.Stderr = &errb
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("%v blocked: %s", args, errb.String())
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, errb.String()
	}
	cases := []struct {
		file   string // the file the fault is made on, relative to the folder
		faults []fault
		args   []string // the command that reads it
		good   int      // its exit code with the file as written
	}{
		{"token", secretFaults, []string{"serve", "--config", "mcpx-policy.yaml", "--token-file", "token", "--addr", "256.0.0.1:1"}, 1},
		{"key.pem", append(secretFaults, fault{"empty", empty, "signing key", false, false}), []string{"bundle", "--config", "mcpx-policy.yaml", "-o", "b.tar.gz", "--sign", "--signing-key", "key.pem", "--signing-alg", "HS256"}, 0},
		{"mcpx-policy.yaml", configFaults, []string{"check", "--config", "mcpx-policy.yaml"}, 0},
		{"conf.d/10.yaml", configFaults, []string{"check", "--config", "mcpx-policy.yaml"}, 0},
		{"conf.d", []fault{{"world-writable", chmod(0o777), "folder", false, false}, {"group-writable", chmod(0o770), "writable by group or others", false, false},
			{"another user's", giveAway, "is owned by uid 65534", true, false}}, []string{"check", "--config", "mcpx-policy.yaml"}, 0},
		{"ov/ov.rego", configFaults, []string{"check", "--config", "mcpx-policy.yaml"}, 0},
		{"catalog.json", configFaults, []string{"check", "--config", "mcpx-policy.yaml", "--catalog", "catalog.json"}, 0},
	}
	files := map[string]string{
		"mcpx-policy.yaml": "version: 1\npolicy:\n  overrides: [ov]\nservers:\n  fs: {}\n",
		"conf.d/10.yaml":   "version: 1\n",
		"ov/ov.rego":       "package mcpx.overrides\n",
		"catalog.json":     `{"servers": {"fs": {"tools": [{"name": "read"}]}}}`,
		"token":            "0123456789abcdef0123456789abcdef\n",
		"key.pem":          "an HMAC secret of some length\n",
	}
	// Each command runs once with the files as written (the same files
	// for every case): what a fault makes it do, it did not do before.
	asWritten := map[string]bool{}
	for _, c := range cases {
		if key := strings.Join(c.args, " "); !asWritten[key] {
			asWritten[key] = true
			t.Run("as written/"+c.args[0]+"/"+c.file, func(t *testing.T) {
				t.Parallel()
				dir := writeFiles(t, files)
				for name := range files {
					os.Chmod(filepath.Join(dir, name), 0o600)
				}
				if code, stderr := run(t, dir, c.args...); code != c.good {
					t.Fatalf("with the files as written: exit %d; want %d\n%s", code, c.good, stderr)
				}
			})
		}
	}
	for _, c := range cases {
		for _, f := range c.faults {
			t.Run(c.file+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				if f.root && !root {
					t.Skip("giving a file to another user needs root")
				}
				dir := writeFiles(t, files)
				for name := range files {
					os.Chmod(filepath.Join(dir, name), 0o600)
				}
				f.make(t, filepath.Join(dir, filepath.FromSlash(c.file)))
				code, stderr := run(t, dir, c.args...)
				if f.warn {
					if code != c.good || !strings.Contains(stderr, "mcpx-policy: warning: ") || !strings.Contains(stderr, f.want) || !strings.Contains(stderr, "chmod 600") {
						t.Errorf("exit %d, stderr:\n%s\nwant exit %d and a warning saying %q", code, stderr, c.good, f.want)
					}
					return
				}
				if code != 1 || !strings.Contains(stderr, f.want) || !strings.Contains(stderr, filepath.Base(c.file)) {
					t.Errorf("exit %d, stderr:\n%s\nwant exit 1 naming %s and saying %q", code, stderr, c.file, f.want)
				}
				if _, err := os.Stat(filepath.Join(dir, "b.tar.gz")); err == nil {
					t.Error("a bundle was written, signed with something else than the key")
				}
			})
		}
	}

	// The ledger's DSN file holds a password: it is a secret (check reads
	// it; it connects to nothing).
	t.Run("dsnFile", func(t *testing.T) {
		t.Parallel()
		dir := writeFiles(t, map[string]string{
			"mcpx-policy.yaml": "version: 1\nledger: {store: postgres, dsnFile: dsn}\n",
			"dsn":              "postgres://gate:pw@db/mcpx\n",
		})
		os.Chmod(filepath.Join(dir, "dsn"), 0o600)
		if code, stderr := run(t, dir, "check", "--config", "mcpx-policy.yaml"); code != 0 {
			t.Fatalf("a 0600 DSN file: exit %d\n%s", code, stderr)
		}
		os.Chmod(filepath.Join(dir, "dsn"), 0o644)
		if code, stderr := run(t, dir, "check", "--config", "mcpx-policy.yaml"); code != 0 || !strings.Contains(stderr, "mcpx-policy: warning: mcpx-policy.yaml:2: ledger.dsnFile: ") ||
			!strings.Contains(stderr, "dsn holds a secret and other users may read it (mode 0644)") || strings.Contains(stderr, "pw@") {
			t.Errorf("a world-readable DSN file: exit %d\n%s", code, stderr)
		}
		os.Chmod(filepath.Join(dir, "dsn"), 0o660)
		if code, stderr := run(t, dir, "check", "--config", "mcpx-policy.yaml"); code != 1 || !strings.Contains(stderr, "writable by group or others") {
			t.Errorf("a group-writable DSN file: exit %d\n%s", code, stderr)
		}
	})
}
