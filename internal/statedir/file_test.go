package statedir_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// items is a store's parsed file for the File tests.
type items struct {
	Version int      `json:"version"`
	Items   []string `json:"items"`
}

var errNewerItems = statedir.Kind(statedir.ErrNewerVersion, "newer items")

func itemsFile(dir string, cache bool) *statedir.File[*items] {
	return &statedir.File[*items]{
		Dir: statedir.New(dir), Name: "items.json", Lock: "items.lock", Max: 1 << 10,
		Empty: func() *items { return &items{Version: 1} },
		Decode: func(b []byte) (*items, error) {
			var v items
			return &v, statedir.DecodeVersioned(b, 1, errNewerItems, &v)
		},
		Store:  "test store",
		Aside:  "move it aside",
		Prefix: "items",
		Cache:  cache,
	}
}

// add appends item, written with EncodeRecords.
func add(item string) func(*items) ([]byte, error) {
	return func(v *items) ([]byte, error) {
		return statedir.EncodeRecords(1, "items", append(append([]string{}, v.Items...), item))
	}
}

// TestFile: a File reads a missing state dir or file as empty, writes
// what a change returns (also with its error, and nothing when it returns
// nil), sees another writer's file through its cache, and reports a bad
// file with the store's own error and hint.
func TestFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	f, other := itemsFile(dir, true), itemsFile(dir, false)
	if v, err := f.Load(); err != nil || len(v.Items) != 0 {
		t.Fatalf("a missing state dir: %v, %v; want empty", v, err)
	}
	if err := f.Update(func(*items) ([]byte, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "items.json")); !os.IsNotExist(err) {
		t.Fatalf("a change that returns nil wrote the file: %v", err)
	}
	if err := f.Update(add("a")); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	if err := f.Update(func(v *items) ([]byte, error) { b, _ := add("b")(v); return b, refused }); err != refused {
		t.Fatalf("a change's error: got %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "items.json"))
	if want := "{\"version\": 1, \"items\": [\n  \"a\",\n  \"b\"\n]}\n"; string(b) != want {
		t.Fatalf("the file is %q, want %q", b, want)
	}
	if v, err := f.Load(); err != nil || fmt.Sprint(v.Items) != "[a b]" {
		t.Fatalf("Load: %v, %v", v, err)
	}
	if err := other.Update(add("c")); err != nil {
		t.Fatal(err)
	}
	if v, err := f.Load(); err != nil || fmt.Sprint(v.Items) != "[a b c]" {
		t.Fatalf("after another writer, the cached File read %v, %v", v, err)
	}
	if b, _ := statedir.EncodeRecords(1, "items", []string{}); string(b) != "{\"version\": 1, \"items\": []}\n" {
		t.Fatalf("no records: %q", b)
	}

	for _, tc := range []struct{ body, cause, hint string }{
		{`{"version": 2, "items": []}`, "newer items", statedir.NewerHint},
		{`{"version": 1`, "not valid json", "move it aside"},
		{strings.Repeat(" ", 2<<10), "above the cap", "move it aside"},
	} {
		if err := os.WriteFile(filepath.Join(dir, "items.json"), []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, file := range []*statedir.File[*items]{f, other} {
			_, err := file.Load()
			var te *statedir.UnreadableError
			if !errors.As(err, &te) || !errors.Is(err, statedir.ErrUnreadable) || te.Store != "test store" ||
				!strings.Contains(te.Err.Error(), tc.cause) || te.Hint != tc.hint || te.Path != filepath.Join(dir, "items.json") {
				t.Errorf("%.20q: got %v, want the store's error with %q and hint %q", tc.body, err, tc.cause, tc.hint)
			}
			if err := file.Update(add("x")); !errors.As(err, &te) {
				t.Errorf("%.20q: Update: %v, want the store's error", tc.body, err)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "items.json")); string(b) != tc.body {
			t.Errorf("%.20q: a bad file was overwritten", tc.body)
		}
	}
}
