package schemarego_test

import (
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// packageName is the generated package name of schema, named by the
// configuration's one namer (ADR 0001).
func packageName(t testing.TB, schema any) string {
	t.Helper()
	name, err := config.SchemaPackage(schema)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// TestPackageName: equal schemas share a package name and distinct ones do
// not, numbers beyond float64 included.
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
		got := packageName(t, v)
		if prev, ok := seen[got]; ok && !(prev == `{"maximum": 1.0}` && s == `{"maximum": 1}`) {
			t.Errorf("%s and %s share %s", prev, s, got)
		}
		seen[got] = s
	}
	if a, b := packageName(t, decodeJSON(t, `{"a": 1, "b": 2}`)), packageName(t, decodeJSON(t, `{"b": 2, "a": 1}`)); a != b {
		t.Errorf("key order changes the name: %s %s", a, b)
	}
}
