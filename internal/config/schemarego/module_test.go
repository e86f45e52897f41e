package schemarego

import (
	"errors"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// TestModuleRefusesBrokenCode: the self-check of module() turns generated
// code that the engine could not compile, or whose printed text is not the
// module that was built, into an internal *Error, which Compile returns
// and the configuration loader reports against the rule.
func TestModuleRefusesBrokenCode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rule   string
		term   *ast.Term // the value of placeholder __c0, if any
		helper string
		want   string
	}{
		{name: "conflicting types", rule: "_x(v) if {\n\tv in [1]\n\tcount(v) > 1\n}", want: "does not compile"},
		{name: "undefined function", rule: "_x(v) if _nope(v)", want: "does not compile"},
		{name: "helper called with the wrong arity", rule: "_x(v) if _is_int(v, 1)", helper: "_is_int", want: "does not compile"},
		{name: "helper called with the wrong type", rule: "_x(v) if _dup(\"ab\")", helper: "_dup", want: "does not compile"},
		{name: "helper not included", rule: "_x(v) if _is_int(v)", want: "does not compile"},
		{name: "builtin outside the templates' set", rule: "_x(v) if time.now_ns() > v", want: "does not compile"},
		{name: "unsafe variable", rule: "_x(v) if y > v", want: "does not compile"},
		{name: "unused every variable", rule: "_x(v) if {\n\tevery k, x in v {\n\t\tk == 1\n\t}\n}", want: "does not compile"},
		{name: "term printed as code that does not parse", rule: "_x(v) if v == __c0", term: ast.VarTerm("a b"), want: "formatted code does not parse"},
		{name: "term printed as other code", rule: "_x(v) if v == __c0", term: ast.VarTerm("a.b"), want: "printed module differs from the built AST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGen(newRawIndex(map[string]any{}))
			if tc.term != nil {
				g.ct(tc.term)
			}
			if tc.helper != "" {
				g.helper(tc.helper)
			}
			g.emit("%s", tc.rule)
			_, err := g.module("s_x", "_s0", &vres{isTrue: true})
			var se *Error
			if !errors.As(err, &se) || !strings.HasPrefix(se.Msg, "internal error: ") || !strings.Contains(se.Msg, tc.want) {
				t.Fatalf("want an internal error %q, got %v", tc.want, err)
			}
		})
	}
	// the same module without the broken rule passes
	g := newGen(newRawIndex(map[string]any{}))
	g.helper("_is_int")
	g.emit("_x(v) if _is_int(v)")
	if _, err := g.module("s_x", "_s0", &vres{isTrue: true}); err != nil {
		t.Fatal(err)
	}
}

// TestHelpersCheckedOnce: every helper parses, prints back to its AST and
// compiles, and each is known to the module check by its function type.
// All of them compile together as well: a generated module prints any of
// them side by side, so no two may define the same rule.
func TestHelpersCheckedOnce(t *testing.T) {
	all := &ast.Module{}
	for name := range helperSrc {
		h, err := helperRuleOf(name)
		if err != nil {
			t.Fatal(err)
		}
		if h.decl == nil || h.decl.Decl == nil || !strings.HasPrefix(h.text, name) {
			t.Errorf("helper %s: %+v", name, h)
		}
		p, err := helperChecks()[name].parsed()
		if err != nil {
			t.Fatal(err)
		}
		if all.Package == nil {
			*all = *p.mod
			all.Rules = nil
		}
		all.Rules = append(all.Rules, p.mod.Copy().Rules...)
	}
	c := checkCompiler()
	if c.Compile(map[string]*ast.Module{"helpers.rego": all}); c.Failed() {
		t.Fatalf("the helpers do not compile together: %v", c.Errors)
	}
	if _, err := helperRuleOf("_no_such_helper"); err == nil {
		t.Error("an unknown helper was found")
	}
}
