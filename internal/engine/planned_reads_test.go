package engine_test

import (
	"sort"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The answers the engine keeps and serves again without an evaluation —
// a hidden tool's plan (ADR 0034), a planned refusal's answer (ADR 0036),
// a common document (ADR 0040) — are keyed by the input fields the
// functions that compute them take as arguments. That is sound only while
// those functions, and everything they reach, never read input themselves:
// a later edit that made plan.document read input.surface, say, would
// make a kept answer serve calls it was not computed for. This test walks
// the compiled policy's dependency graph from each such function and fails
// on any rule it reaches that refers to input.

// plannedFunctions are the functions whose values the engine keeps by
// their arguments (planned.go, hidden.go).
var plannedFunctions = []string{
	"data.mcpx.lib.plan.common",
	"data.mcpx.lib.plan.hidden_common",
	"data.mcpx.lib.plan.document",
	"data.mcpx.lib.tool.facts",
	"data.mcpx.lib.shadow.on",
	"data.mcpx.steps.pin.mode_of",
}

// rulesReading returns the rules reachable from the rules of ref (itself
// included) that refer to input, by their package and name, and how many
// rules were reached.
func rulesReading(t *testing.T, c *ast.Compiler, ref string) ([]string, int) {
	t.Helper()
	roots := c.GetRules(ast.MustParseRef(ref))
	if len(roots) == 0 {
		t.Fatalf("%s: no such rule in the policy", ref)
	}
	seen := map[*ast.Rule]bool{}
	queue := append([]*ast.Rule(nil), roots...)
	var reading []string
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		if seen[r] {
			continue
		}
		seen[r] = true
		reads := false
		ast.WalkRefs(r, func(x ast.Ref) bool {
			if x.HasPrefix(ast.InputRootRef) {
				reads = true
			}
			return reads
		})
		if reads {
			reading = append(reading, r.Module.Package.Path.String()+"."+r.Head.Name.String())
		}
		for dep := range c.Graph.Dependencies(r) {
			if d, ok := dep.(*ast.Rule); ok {
				queue = append(queue, d)
			}
		}
	}
	sort.Strings(reading)
	return reading, len(seen)
}

func TestPlannedFunctionsReadNoInput(t *testing.T) {
	p := policyOfYAML(t, plannedConfig)
	modules := map[string]*ast.Module{}
	for name, src := range p.Modules {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		modules[name] = m
	}
	c := ast.NewCompiler()
	if c.Compile(modules); c.Failed() {
		t.Fatal(c.Errors)
	}
	for _, ref := range plannedFunctions {
		reading, n := rulesReading(t, c, ref)
		if len(reading) > 0 {
			t.Errorf("%s reaches rules that read input: %v; the engine keeps its value by its arguments alone (planned.go), so it must not read input", ref, reading)
		}
		if n < 2 {
			t.Errorf("%s: the walk reached %d rules; want its dependencies too", ref, n)
		}
	}
	// the walk finds input where it is read: the decision reads it
	if reading, _ := rulesReading(t, c, "data.mcpx.common_document"); len(reading) == 0 {
		t.Error("data.mcpx.common_document: the walk found no rule reading input; it reads the call's names")
	}
}
