// Package policy_test holds black-box tests of the whole engine: through the
// public SDK (package mcpxpolicy) and through the built CLI binary.
package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/opabundle"
)

func ptr[T any](v T) *T { return &v }

var (
	readOnly    = &decision.Annotations{ReadOnlyHint: ptr(true)}
	destructive = &decision.Annotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(true)}
	additive    = &decision.Annotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(false)}
)

func object(props ...string) map[string]any {
	p := map[string]any{}
	for _, k := range props {
		p[k] = map[string]any{}
	}
	return map[string]any{"type": "object", "properties": p}
}

var (
	readFile  = decision.Tool{Name: "read_file", Annotations: readOnly, InputSchema: object("path", "lines", "tail")}
	writeFile = decision.Tool{Name: "write_file", Annotations: destructive, InputSchema: object("path", "content")}
	mkdir     = decision.Tool{Name: "create_directory", Annotations: additive, InputSchema: object("path")}
	deleteF   = decision.Tool{Name: "delete_file", Annotations: destructive, InputSchema: object("path", "secret_schema_key")}
	gitPush   = decision.Tool{Name: "git_push", Annotations: additive, InputSchema: object("remote", "branch", "force")}
)

// writeFiles writes name → content under a new temp dir and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newEngine loads config into an Engine with its own state dir and no
// environment layer.
func newEngine(t *testing.T, config string) (*mcpxpolicy.Engine, string) {
	t.Helper()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": config})
	state := filepath.Join(dir, "state")
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{
		ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")},
		Env:         []string{},
		StateDir:    state,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return eng, dir
}

func decide(t *testing.T, eng *mcpxpolicy.Engine, call decision.Call) decision.Decision {
	t.Helper()
	d, err := eng.Decide(context.Background(), call)
	if err != nil {
		t.Fatalf("Decide(%s.%s): %v", call.Server, call.Tool.Name, err)
	}
	return d
}

func codes(rs []decision.Reason) []decision.Code {
	out := []decision.Code{}
	for _, r := range rs {
		out = append(out, r.Code)
	}
	return out
}

func sameCodes(a, b []decision.Code) bool { return slices.Equal(a, b) }

// writeBundle writes the policy of opts as an OPA bundle archive at path,
// signed when sign is not nil.
func writeBundle(t *testing.T, opts mcpxpolicy.Options, path string, sign *opabundle.Signing) {
	t.Helper()
	files, err := mcpxpolicy.BundleFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	if sign != nil {
		if err := opabundle.Sign(files, *sign); err != nil {
			t.Fatal(err)
		}
	}
	if err := opabundle.WriteArchive(files, path); err != nil {
		t.Fatal(err)
	}
}
