package config_test

import (
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/rego"
)

var updateRegoData = flag.Bool("update", false, "rewrite rego/mcpx/codes/data.json and rego/mcpx/vocab/data.json from the Go tables")

// TestRegoDataIsTheGoTables ties the copies `opa test rego/` loads as
// data.mcpx.codes and data.mcpx.vocab to their owners, decision.Codes and
// the loader's modes (go test ./internal/config/ -run
// TestRegoDataIsTheGoTables -update rewrites them); and the data every
// compiled config carries to the same tables.
func TestRegoDataIsTheGoTables(t *testing.T) {
	c, err, _ := load(t, map[string]string{"main.yaml": "version: 1\nservers: {fs: {}}\n"}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key, file string
		want      map[string]any
	}{
		{"codes", "../../rego/mcpx/codes/data.json", decision.CodesData()},
		{"vocab", "../../rego/mcpx/vocab/data.json", config.VocabData()},
	} {
		b, err := json.MarshalIndent(tc.want, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
		if *updateRegoData {
			if err := os.WriteFile(tc.file, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		onDisk, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if string(onDisk) != string(b) {
			t.Errorf("%s is not the Go table: run go test ./internal/config/ -run TestRegoDataIsTheGoTables -update", tc.file)
		}
		if got := c.Data[tc.key]; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("the compiled data.mcpx.%s = %v, want %v", tc.key, got, tc.want)
		}
	}
}

// TestRegoReasonCodesAreTheGoTable ties what the policy emits to
// decision.Codes: every reason code the Rego names (a reference
// data.mcpx.codes.<Code>, the only way a rule builds one) is in the table,
// every rule's METADATA custom.code names the code its body builds, and
// every code of a policy step is built by some rule.
func TestRegoReasonCodesAreTheGoTable(t *testing.T) {
	known := map[string]bool{}
	for _, c := range decision.Codes {
		known[string(c.Code)] = true
	}
	used := map[string]bool{}
	for name, src := range rego.Modules() {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		aliases := map[string]bool{"data.mcpx.codes": true}
		for _, imp := range m.Imports {
			if imp.Path.String() == "data.mcpx.codes" {
				aliases[imp.Path.Value.(ast.Ref)[len(imp.Path.Value.(ast.Ref))-1].Value.(ast.String).String()] = true
				aliases["codes"] = true
			}
		}
		codesIn := func(x any) []string {
			var out []string
			ast.WalkRefs(x, func(r ast.Ref) bool {
				prefix := r.String()
				for a := range aliases {
					rest, ok := strings.CutPrefix(prefix, a+".")
					if !ok {
						continue
					}
					code, _, _ := strings.Cut(rest, ".")
					out = append(out, code)
				}
				return false
			})
			return out
		}
		for _, code := range codesIn(m) {
			used[code] = true
			if !known[code] {
				t.Errorf("%s: reason code %s is not in decision.Codes", name, code)
			}
		}
		// the codes each rule or function of the module builds, by name
		byName := map[string][]string{}
		for _, r := range m.Rules {
			n := r.Head.Ref().String()
			byName[n] = append(byName[n], codesIn(r)...)
		}
		for _, r := range m.Rules {
			for _, a := range r.Annotations {
				want, ok := a.Custom["code"].(string)
				if !ok {
					continue
				}
				got := codesIn(r)
				if len(got) == 0 { // the rule builds its reason with a function of the module
					ast.WalkTerms(r, func(x *ast.Term) bool {
						if call, ok := x.Value.(ast.Call); ok {
							got = append(got, byName[call[0].String()]...)
						}
						return false
					})
				}
				if len(got) == 0 || got[0] != want || !allSame(got) {
					t.Errorf("%s:%d: METADATA custom.code %s, but the rule builds %v", name, r.Location.Row, want, got)
				}
			}
		}
	}
	var missing []string
	for _, c := range decision.Codes {
		// the confirmation step's codes are built in Go, when an ask is
		// answered, never by the policy
		if c.Step != decision.StepConfirmation && !used[string(c.Code)] {
			missing = append(missing, string(c.Code))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no rule builds %v", missing)
	}
}

func allSame(xs []string) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}
