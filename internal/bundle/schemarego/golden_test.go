package schemarego_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/bundle/schemarego"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.rego")

// goldenCase is testdata/golden/<name>.json: a schema, the JSON Pointer of
// the argument it applies to ("" for the whole arguments), and sample
// values it must accept and refuse.
type goldenCase struct {
	Doc      string          `json:"doc"`
	Argument string          `json:"argument"`
	Schema   json.RawMessage `json:"schema"`
	Valid    json.RawMessage `json:"valid"`
	Invalid  json.RawMessage `json:"invalid"`
}

// TestGolden pins the generated Rego of each schema in testdata/golden and
// checks its samples, with santhosh v6 confirming every expectation.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*.json")
	if len(files) < 5 {
		t.Fatalf("found %d golden cases", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var gc goldenCase
			if err := json.Unmarshal(b, &gc); err != nil {
				t.Fatal(err)
			}
			schema := decodeJSON(t, string(gc.Schema))
			src, err := schemarego.Compile(schema, packageName(t, schema))
			if err != nil {
				t.Fatal(err)
			}
			goldenPath := strings.TrimSuffix(f, ".json") + ".rego"
			if *update {
				if err := os.WriteFile(goldenPath, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if string(want) != src {
				wl, gl := strings.Split(string(want), "\n"), strings.Split(src, "\n")
				line := 0
				for line < len(wl) && line < len(gl) && wl[line] == gl[line] {
					line++
				}
				got, exp := "", ""
				if line < len(gl) {
					got = gl[line]
				}
				if line < len(wl) {
					exp = wl[line]
				}
				t.Errorf("generated Rego differs from %s at line %d:\n got: %s\nwant: %s\n(run with -update and review the diff)", goldenPath, line+1, got, exp)
			}
			r, err := prepareAt(schema, gc.Argument)
			if err != nil {
				t.Fatal(err)
			}
			for _, sample := range []struct {
				raw   json.RawMessage
				valid bool
			}{{gc.Valid, true}, {gc.Invalid, false}} {
				values, _ := decodeJSON(t, string(sample.raw)).([]any)
				if len(values) == 0 {
					t.Fatalf("no samples with valid=%v", sample.valid)
				}
				for _, v := range values {
					vj, _ := json.Marshal(v)
					if got := santhoshValid(t, schema, v); got != sample.valid {
						t.Fatalf("sample %s: santhosh says valid=%v, the case says %v", vj, got, sample.valid)
					}
					vs, err := r.violations(v)
					if err != nil {
						t.Fatalf("sample %s: %v", vj, err)
					}
					if (len(vs) == 0) != sample.valid {
						t.Errorf("sample %s: want valid=%v, got violations %v", vj, sample.valid, vs)
					}
					for _, x := range vs {
						m := x.(map[string]any)
						p, _ := m["path"].(string)
						if !strings.HasPrefix(p, gc.Argument) || m["constraint"] == nil {
							t.Errorf("sample %s: malformed violation %v", vj, m)
						}
						if _, ok := m["value"]; !ok {
							t.Errorf("sample %s: violation without value %v", vj, m)
						}
						if _, ok := m["expected"]; !ok {
							t.Errorf("sample %s: violation without expected %v", vj, m)
						}
					}
					t.Logf("%s -> %v", vj, vs)
				}
			}
		})
	}
}
