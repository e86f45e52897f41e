package pins_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/pins"
	"github.com/mcpx/mcpx-policy/internal/pins/pinstest"
)

func boolp(b bool) *bool { return &b }

func seen(t *testing.T, tool decision.Tool) pins.Seen {
	t.Helper()
	s, err := pins.SeenTool(tool)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var writeFile = decision.Tool{Name: "write_file", Description: "Writes a file.",
	Annotations: &decision.Annotations{Title: "Write", ReadOnlyHint: boolp(false)},
	InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}

// TestFileStore runs the behaviour every pin store promises on the file
// store: each Backend a Store of its own on one state dir, as processes
// have.
func TestFileStore(t *testing.T) {
	pinstest.Run(t, func(t *testing.T) pinstest.Opener {
		dir := filepath.Join(t.TempDir(), "state")
		return func() pins.Backend { return open(t, dir) }
	})
}

func open(t *testing.T, dir string) *pins.Store {
	t.Helper()
	s, err := pins.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFileHoldsNoDefinition: the file keeps hashes and hints, never a
// description or a schema, and is private.
func TestFileHoldsNoDefinition(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir)
	secret := writeFile
	secret.Description = "uses token ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	if _, err := s.See("fs", seen(t, secret)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, pins.FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"ghp_", "Writes", "properties", `"Write"`} {
		if strings.Contains(string(b), leak) {
			t.Errorf("pins.json holds %q:\n%s", leak, b)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, pins.FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("pins.json mode %v, %v; want 0600", fi.Mode(), err)
	}
}

// TestUnusableFileIsNeverOverwritten: a corrupt or newer file fails See,
// Accept and List with an *UnreadableError and stays as it was.
func TestUnusableFileIsNeverOverwritten(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"corrupt": `{"version": 1, "pins": [`,
		"newer":   `{"version": 2, "pins": []}`,
		"empty":   ``,
		"twice": `{"version": 1, "pins": [{"server":"fs","tool":"a","pinned":{"sha256":"` + sixtyFour + `","fields":{},"seen":"2026-01-01T00:00:00Z"}},` +
			`{"server":"fs","tool":"a","pinned":{"sha256":"` + sixtyFour + `","fields":{},"seen":"2026-01-01T00:00:00Z"}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, pins.FileName)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			s := open(t, dir)
			_, err1 := s.See("fs", seen(t, writeFile))
			_, err2 := s.Accept("fs", "a", "")
			_, err3 := s.List()
			for _, err := range []error{err1, err2, err3} {
				var ue *pins.UnreadableError
				if !errors.As(err, &ue) || !errors.Is(err, pins.ErrUnreadable) || ue.Hint == "" {
					t.Errorf("got %v; want an *UnreadableError with a hint", err)
				}
			}
			if name == "newer" && !errors.Is(err1, pins.ErrNewerVersion) {
				t.Errorf("newer file: %v; want ErrNewerVersion", err1)
			}
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Errorf("the file was overwritten: %q", b)
			}
		})
	}
}

const sixtyFour = "0000000000000000000000000000000000000000000000000000000000000000"

// TestLinkedFileRefused: pins.json as a symbolic link is unreadable, and
// what it points at is not written.
func TestLinkedFileRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "elsewhere.json")
	if err := os.WriteFile(target, []byte(`{"version": 1, "pins": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, pins.FileName)); err != nil {
		t.Fatal(err)
	}
	if _, err := open(t, dir).See("fs", seen(t, writeFile)); !errors.Is(err, pins.ErrUnreadable) {
		t.Fatalf("See through a link: %v; want ErrUnreadable", err)
	}
	if b, _ := os.ReadFile(target); string(b) != `{"version": 1, "pins": []}` {
		t.Errorf("the link's target was written: %s", b)
	}
}
