package engine

import (
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	policyrego "github.com/mcpx/mcpx-policy/rego"
)

// TestCompileGuardIsThePolicys ties the engine's compile guard to the
// policy's (rego/mcpx/lib/compile_guard.rego, the one owner): the engine
// compiles that file with every policy, also one that does not ship it,
// and the file holds what makes it work, a `with` on a rule of its own
// package.
func TestCompileGuardIsThePolicys(t *testing.T) {
	src := policyrego.CompileGuard()
	if got := policyrego.Modules()[policyrego.CompileGuardFile]; got != src {
		t.Fatalf("the policy's %s is not rego.CompileGuard()", policyrego.CompileGuardFile)
	}
	m, err := ast.ParseModuleWithOpts(policyrego.CompileGuardFile, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		t.Fatal(err)
	}
	own := m.Package.Path.String()
	withOnOwnRule := false
	ast.WalkWiths(m, func(w *ast.With) bool {
		withOnOwnRule = withOnOwnRule || strings.HasPrefix(w.Target.String(), own+".")
		return false
	})
	if !withOnOwnRule {
		t.Errorf("%s has no `with` on a rule of %s", policyrego.CompileGuardFile, own)
	}
	// a policy without the guard is compiled with it
	eng, err := Prepare(t.Context(), Policy{Modules: map[string]string{"p.rego": "package mcpx\n\ndecision := {}\n"}, Data: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := eng.memo.compiler.Modules[policyrego.CompileGuardFile]; !ok {
		t.Errorf("the engine did not compile the policy's guard %s", policyrego.CompileGuardFile)
	}
}
