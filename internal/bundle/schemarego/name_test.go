package schemarego_test

import (
	"testing"

	"github.com/mcpx/mcpx-policy/internal/bundle"
	"github.com/mcpx/mcpx-policy/internal/bundle/schemarego"
)

// TestPackageName: the name follows ADR 0001 exactly as the configuration
// names packages, equal schemas share it and distinct ones do not.
func TestPackageName(t *testing.T) {
	schemas := []string{
		`{"type": "string"}`,
		`{"maximum": 1.0}`,
		`{"maximum": 1}`,
		`{"b": 1, "a": [true, null, "x"]}`,
		`{"multipleOf": 0.1000000000000000001}`,
		`{"multipleOf": 0.1}`,
		`{"const": 9007199254740993}`,
		`{"const": 9007199254740992}`,
		`{"maximum": 1e400}`,
	}
	seen := map[string]string{}
	for _, s := range schemas {
		v := decodeJSON(t, s)
		got := schemarego.PackageName(v)
		want, err := bundle.SchemaPackage(v)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: PackageName %s, bundle.SchemaPackage %s", s, got, want)
		}
		if prev, ok := seen[got]; ok && !(prev == `{"maximum": 1.0}` && s == `{"maximum": 1}`) {
			t.Errorf("%s and %s share %s", prev, s, got)
		}
		seen[got] = s
	}
	if a, b := schemarego.PackageName(decodeJSON(t, `{"a": 1, "b": 2}`)), schemarego.PackageName(decodeJSON(t, `{"b": 2, "a": 1}`)); a != b {
		t.Errorf("key order changes the name: %s %s", a, b)
	}
}
