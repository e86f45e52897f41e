package config_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// writeTree writes files (slash paths relative to a new temp folder) and
// returns the folder.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeCompiler stands in for schemarego.Compile: it records the schemas
// it sees and returns a tiny valid module, or an error for a schema that
// holds "$dynamicRef".
type fakeCompiler struct {
	mu    sync.Mutex
	calls map[string]any
	n     int
}

func (f *fakeCompiler) compile(schema any, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.calls == nil {
		f.calls = map[string]any{}
	}
	f.calls[name] = schema
	if m, ok := schema.(map[string]any); ok {
		if _, bad := m["$dynamicRef"]; bad {
			return "", fmt.Errorf("keyword $dynamicRef at /$dynamicRef\n  - is not supported")
		}
	}
	return "package mcpx.rules." + name + "\n\nviolations := {}\n", nil
}

// load loads main.yaml (and the rest of files) from a fresh folder with an
// empty environment, and returns the folder too. The config file is named
// by its path relative to the folder so messages are stable: the test
// runs Load from inside a chdir-free relative path built on dir.
func load(t *testing.T, files map[string]string, opts config.LoadOptions) (*config.Compiled, error, string) {
	t.Helper()
	dir := writeTree(t, files)
	if opts.Paths == nil {
		opts.Paths = []string{"main.yaml"}
	}
	for i, p := range opts.Paths {
		opts.Paths[i] = filepath.Join(dir, p)
	}
	if opts.Env == nil {
		opts.Env = []string{}
	}
	if opts.SchemaCompiler == nil {
		opts.SchemaCompiler = (&fakeCompiler{}).compile
	}
	if opts.Catalog != "" {
		opts.Catalog = filepath.Join(dir, opts.Catalog)
	}
	c, err := config.Load(opts)
	return c, err, dir
}

// rel strips the temp folder from messages.
func rel(dir, s string) string {
	return strings.ReplaceAll(s, dir+string(filepath.Separator), "")
}

// wantWarnings checks c's warnings, their folder dir cut from paths,
// against want, in order.
func wantWarnings(t *testing.T, c *config.Compiled, dir string, want ...string) {
	t.Helper()
	var got []string
	for _, w := range c.Warnings {
		got = append(got, rel(dir, w.String()))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

// configData returns data.mcpx.config.
func configData(t *testing.T, c *config.Compiled) map[string]any {
	t.Helper()
	if len(c.Data) != 3 || c.Data["codes"] == nil || c.Data["vocab"] == nil {
		t.Fatalf("Data has keys %v, want config, codes and vocab", keys(c.Data))
	}
	cfg, ok := c.Data["config"].(map[string]any)
	if !ok {
		t.Fatalf("Data[config] is %T", c.Data["config"])
	}
	return cfg
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// jsonOf renders v as JSON for comparisons of small structures.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// get walks a path of map keys.
func get(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("at %q: %T is not an object", k, v)
		}
		v, ok = m[k]
		if !ok {
			t.Fatalf("key %q missing (have %v)", k, keys(m))
		}
	}
	return v
}
