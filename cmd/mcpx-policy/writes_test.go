package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/ledger"
)

func runW(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runWrites(args, &out, &errb)
	return code, out.String(), errb.String()
}

// unknownWrites records n unknown-outcome writes to server in dir.
func unknownWrites(t *testing.T, dir, server string, n int) []*ledger.Dispatch {
	t.Helper()
	l, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ds []*ledger.Dispatch
	for i := range n {
		d, err := l.Begin(server, "write_file", map[string]any{"i": i}, "mcp")
		if err != nil {
			t.Fatal(err)
		}
		d.Sent()
		if err := d.Unknown("timeout"); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return ds
}

func TestWritesList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := runW(t, "--state-dir", dir)
	if code != 0 || out != "no unknown-outcome writes\n" || errs != "" {
		t.Fatalf("empty ledger: %d %q %q", code, out, errs)
	}
	ds := unknownWrites(t, dir, "fs", 2)
	unknownWrites(t, dir, "git", 1)

	code, out, errs = runW(t, "--state-dir", dir)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want one line per entry, got:\n%s", out)
	}
	for i, d := range ds {
		e := d.Entry()
		for _, want := range []string{e.Server, e.Tool, e.Time, "id=" + e.ID, "args_sha256=" + e.ArgsSHA256,
			"clear: mcpx-policy writes clear fs --id " + e.ID + " --state-dir " + dir} {
			if !strings.Contains(lines[i], want) {
				t.Errorf("line %q lacks %q", lines[i], want)
			}
		}
	}

	code, out, _ = runW(t, "--format", "json", "--state-dir", dir)
	var st ledger.State
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("json: exit %d, %v:\n%s", code, err, out)
	}
	if len(st.Entries) != 3 || st.Entries[0].ID != ds[0].ID() || st.Entries[0].Cause != "timeout" {
		t.Fatalf("json entries = %+v", st.Entries)
	}
}

func TestWritesClear(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ds := unknownWrites(t, dir, "fs", 3)
	unknownWrites(t, dir, "git", 1)

	// Flags before and after SERVER.
	code, out, errs := runW(t, "clear", "--state-dir", dir, "fs", "--id", ds[1].ID(), "--reason", "checked by hand")
	if code != 0 || errs != "" || !strings.Contains(out, "cleared fs\twrite_file") || !strings.Contains(out, ds[1].ID()) {
		t.Fatalf("clear one: %d %q %q", code, out, errs)
	}
	code, out, errs = runW(t, "clear", "fs", "--state-dir", dir)
	if code != 0 || errs != "" || !strings.Contains(out, "2 write(s) cleared") {
		t.Fatalf("clear all: %d %q %q", code, out, errs)
	}
	code, out, _ = runW(t, "clear", "fs", "--state-dir", dir)
	if code != 0 || !strings.Contains(out, "nothing cleared") {
		t.Fatalf("clear none: %d %q", code, out)
	}
	l, _ := ledger.Open(dir)
	st, err := l.List()
	if err != nil || len(st.Entries) != 1 || st.Entries[0].Server != "git" || len(st.Cleared) != 3 ||
		st.Cleared[0].ID != ds[1].ID() || st.Cleared[0].Reason != "checked by hand" {
		t.Fatalf("after clears: %+v, %v", st, err)
	}
}

func TestWritesErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	unknownWrites(t, dir, "fs", 1)
	for _, tc := range []struct {
		name      string
		args      []string
		errorText string
		hint      string
	}{
		{"no server", []string{"clear", "--state-dir", dir}, "writes clear needs a SERVER", "usage"},
		{"two servers", []string{"clear", "fs", "git", "--state-dir", dir}, `unexpected argument "git"`, "usage"},
		{"bad id", []string{"clear", "fs", "--id", "nope", "--state-dir", dir}, "server fs has no unknown-outcome write with id nope", "mcpx-policy writes"},
		{"bad format", []string{"--format", "yaml", "--state-dir", dir}, `unknown --format "yaml"`, "usage"},
		{"bad flag", []string{"--nope"}, "flag provided but not defined", "usage"},
		{"stray arg", []string{"list", "--state-dir", dir}, `unexpected argument "list"`, "usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runW(t, tc.args...)
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, out)
			}
			lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
			if len(lines) != 2 || lines[0] != "mcpx-policy: error: "+tc.errorText && !strings.HasPrefix(lines[0], "mcpx-policy: error: "+tc.errorText) ||
				!strings.HasPrefix(lines[1], "mcpx-policy: hint: ") || !strings.Contains(lines[1], tc.hint) {
				t.Fatalf("stderr:\n%s", errs)
			}
			for _, l := range lines {
				if strings.HasSuffix(l, ".") {
					t.Errorf("trailing period: %q", l)
				}
			}
		})
	}
}

func TestWritesHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := runW(t, "--help")
	if code != 0 || !strings.HasPrefix(out, "usage: mcpx-policy writes") {
		t.Fatalf("%d %q", code, out)
	}
}

func TestWritesUnreadableLedger(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, data, hint string
	}{
		{"corrupt", `{"version": 1, "entries": [{"id": "a", "ser`, "left untouched"},
		{"newer", `{"version": 7, "entries": []}`, "a newer mcpx-policy wrote this file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ledger.FileName)
			os.WriteFile(path, []byte(tc.data), 0o600)
			for _, args := range [][]string{{"--state-dir", dir}, {"clear", "fs", "--state-dir", dir}, {"clear", "fs", "--id", "a", "--state-dir", dir}} {
				code, _, errs := runW(t, args...)
				if code != 1 || !strings.HasPrefix(errs, "mcpx-policy: error: ledger "+path+" is unreadable: ") ||
					!strings.Contains(errs, "\nmcpx-policy: hint: ") || !strings.Contains(errs, tc.hint) {
					t.Errorf("%v: exit %d, stderr %q", args, code, errs)
				}
			}
			if b, _ := os.ReadFile(path); string(b) != tc.data {
				t.Fatalf("file changed: %q", b)
			}
		})
	}
}

// TestWritesHostileStateDir: a state dir others may write, or a ledger
// that is a link, is refused with a hint that says what to fix, and
// `writes clear` never replaces the link.
func TestWritesHostileStateDir(t *testing.T) {
	t.Parallel()
	t.Run("world-writable", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "state")
		unknownWrites(t, dir, "fs", 1)
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"--state-dir", dir}, {"clear", "fs", "--state-dir", dir}} {
			code, out, errs := runW(t, args...)
			want := "mcpx-policy: error: ledger " + filepath.Join(dir, ledger.FileName) + " is unreadable: writable by other users: state dir " +
				dir + " is writable by group or others (mode 0777)\nmcpx-policy: hint: check its content, then run: chmod 700 " + dir +
				" (nothing was changed; writes stay blocked until then)\n"
			if code != 1 || out != "" || errs != want {
				t.Errorf("%v: exit %d, stdout %q, stderr:\n%s\nwant:\n%s", args, code, out, errs, want)
			}
		}
	})
	t.Run("ledger-symlink", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "state")
		unknownWrites(t, dir, "fs", 1)
		path := filepath.Join(dir, ledger.FileName)
		real := filepath.Join(t.TempDir(), "real.json")
		if err := os.Rename(path, real); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, path); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(real)
		code, _, errs := runW(t, "clear", "fs", "--state-dir", dir)
		if code != 1 || !strings.Contains(errs, "is a symbolic link to "+real+", not a regular file") ||
			!strings.Contains(errs, "hint: the ledger's files must be regular files: move it aside") {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
		if to, err := os.Readlink(path); err != nil || to != real {
			t.Fatalf("the link was replaced: %q, %v", to, err)
		}
		if after, _ := os.ReadFile(real); string(after) != string(before) {
			t.Fatal("the link's target changed")
		}
	})
}
