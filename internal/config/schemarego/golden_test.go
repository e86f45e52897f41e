package schemarego_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"

	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.rego and *.violations.json")

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

// goldenFiles are the cases testdata/golden/<name>.json (not the pinned
// <name>.violations.json).
func goldenFiles() []string {
	all, _ := filepath.Glob("testdata/golden/*.json")
	var files []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".violations.json") {
			files = append(files, f)
		}
	}
	return files
}

// TestGolden pins the generated Rego of each schema in testdata/golden and
// the violations of its samples, and checks the samples' verdicts, with
// santhosh v6 confirming every expectation.
func TestGolden(t *testing.T) {
	files := goldenFiles()
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
			// the module is printed as opa fmt prints it
			if formatted, err := format.SourceWithOpts(goldenPath, []byte(src), format.Opts{RegoVersion: ast.RegoV1}); err != nil || string(formatted) != src {
				t.Errorf("the generated module is not in opa fmt form (%v)", err)
			}
			r, err := prepareAt(schema, gc.Argument)
			if err != nil {
				t.Fatal(err)
			}
			// every sample's violations, pinned in <name>.violations.json
			var pinned []json.RawMessage
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
					pin, _ := json.Marshal(map[string]any{"value": v, "violations": vs})
					pinned = append(pinned, pin)
				}
			}
			got, _ := json.MarshalIndent(pinned, "", "  ")
			got = append(got, '\n')
			violationsPath := strings.TrimSuffix(f, ".json") + ".violations.json"
			if *update {
				if err := os.WriteFile(violationsPath, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want, err := os.ReadFile(violationsPath); err != nil {
				t.Errorf("%v (run with -update)", err)
			} else if string(want) != string(got) {
				t.Errorf("violations differ from %s (run with -update and review the diff):\n%s", violationsPath, got)
			}
		})
	}
}
