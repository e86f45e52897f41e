package engine

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// TestPreparedKeepsNoParsedModule: every rule the prepared engine's
// compiler holds, else branches included, belongs to the compiler's own
// copy of its module. OPA's Module.Copy leaves an else rule pointing at
// the parsed module, which then stays alive (every rule, expression and
// term of it) as long as the engine: for bench's L config, 15 MiB of a
// 86 MiB prepared heap (docs/performance.md).
func TestPreparedKeepsNoParsedModule(t *testing.T) {
	src := "package mcpx\n\n" +
		"size(x) := \"one\" if x == 1\n\telse := \"two\" if x == 2\n\telse := \"many\"\n\n" +
		"decision := {\"size\": size(input.n)}\n"
	eng, err := Prepare(t.Context(), Policy{Modules: map[string]string{"p.rego": src}, Data: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	elses := 0
	for name, m := range eng.memo.compiler.Modules {
		ast.WalkRules(m, func(r *ast.Rule) bool {
			for e := r; e != nil; e = e.Else {
				if e != r {
					elses++
				}
				if e.Module != m {
					t.Errorf("%s: a rule at %v belongs to another module than the compiler's copy of its own", name, e.Location)
				}
			}
			return false
		})
	}
	if elses < 2 {
		t.Fatalf("the policy has %d else rules, want 2", elses)
	}
}
