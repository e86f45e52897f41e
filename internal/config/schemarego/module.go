package schemarego

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/types"
)

// Assembling and checking one module. The generated rules are parsed from
// the templates, their placeholders replaced by the schema's terms, and
// printed; the printed text is parsed again and must give the same AST,
// and that AST must compile. The helper rules (helpers.go) are fixed text:
// each is parsed, printed, re-parsed and compiled once per process, the
// first time a module uses it, and the function type the compiler infers
// for it is kept. A module's check
// then compiles its generated rules only, with each helper it calls
// declared by that type, and its text ends with the helpers' printed text
// as it is.

// regoCaps are this OPA's Rego v1 capabilities, built once: the parser and
// the formatter would otherwise copy and sort the builtins for every call.
var regoCaps = sync.OnceValue(func() *ast.Capabilities {
	return ast.CapabilitiesForThisVersion(ast.CapabilitiesRegoVersion(ast.RegoV1))
})

func parserOpts() ast.ParserOptions {
	return ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: regoCaps()}
}

func formatOpts() format.Opts {
	return format.Opts{RegoVersion: ast.RegoV1, Capabilities: regoCaps()}
}

// helperRule is one entry of helperSrc, parsed, printed and typed.
type helperRule struct {
	text string // as printed, without the package line
	decl *ast.Builtin
}

const helperPkg = "mcpx.rules.helpers"

// parsedHelper is one helper parsed and printed: its rules and its printed
// text.
type parsedHelper struct {
	mod  *ast.Module
	text string
}

// helperChecks are, per helper, its parse and its check, each done once
// per process and only when a module first uses the helper: a config
// whose rules need two helpers does not pay for the others (a one-shot
// command's load would otherwise spend a quarter of the config's compile
// on helpers it never prints).
var helperChecks = sync.OnceValue(func() map[string]*helperCheck {
	out := make(map[string]*helperCheck, len(helperSrc))
	for name := range helperSrc {
		out[name] = &helperCheck{}
	}
	for name, c := range out {
		c.parsed = sync.OnceValues(func() (parsedHelper, error) { return parseHelper(name) })
		c.typed = sync.OnceValues(func() (helperRule, error) { return typeHelper(name, out) })
	}
	return out
})

type helperCheck struct {
	parsed func() (parsedHelper, error)
	typed  func() (helperRule, error)
}

// helperRuleOf is the helper name, checked (parseHelper, typeHelper).
func helperRuleOf(name string) (helperRule, error) {
	c, ok := helperChecks()[name]
	if !ok {
		return helperRule{}, fmt.Errorf("no helper %s", name)
	}
	return c.typed()
}

// parseHelper parses the helper's text, prints it, and checks the printed
// text parses to the same AST.
func parseHelper(name string) (parsedHelper, error) {
	pkg := "package " + helperPkg + "\n\n"
	mod, err := ast.ParseModuleWithOpts(name+".rego", pkg+helperSrc[name], parserOpts())
	if err != nil {
		return parsedHelper{}, fmt.Errorf("helper %s does not parse: %w", name, err)
	}
	text, err := format.AstWithOpts(mod, formatOpts())
	if err != nil {
		return parsedHelper{}, fmt.Errorf("helper %s: %w", name, err)
	}
	again, err := ast.ParseModuleWithOpts(name+".rego", string(text), parserOpts())
	if err != nil || !again.Equal(mod) {
		return parsedHelper{}, fmt.Errorf("helper %s: printed text differs from its AST (%v)", name, err)
	}
	body, ok := strings.CutPrefix(string(text), pkg)
	if !ok {
		return parsedHelper{}, fmt.Errorf("helper %s: unexpected printed form", name)
	}
	return parsedHelper{mod: mod, text: body}, nil
}

// typeHelper compiles the helper with the helpers it uses (helperDeps, all
// the way down: a helper calls no other) and keeps the function type the
// compiler infers for it.
func typeHelper(name string, checks map[string]*helperCheck) (helperRule, error) {
	all := &ast.Module{}
	seen := map[string]bool{}
	var add func(string) error
	add = func(n string) error {
		if seen[n] {
			return nil
		}
		seen[n] = true
		c, ok := checks[n]
		if !ok {
			return fmt.Errorf("helper %s uses an unknown helper %s", name, n)
		}
		p, err := c.parsed()
		if err != nil {
			return err
		}
		if all.Package == nil {
			*all = *p.mod
			all.Rules = nil
		}
		all.Rules = append(all.Rules, p.mod.Rules...)
		for _, d := range helperDeps[n] {
			if err := add(d); err != nil {
				return err
			}
		}
		return nil
	}
	if err := add(name); err != nil {
		return helperRule{}, err
	}
	c := checkCompiler()
	if c.Compile(map[string]*ast.Module{"helpers.rego": all}); c.Failed() {
		return helperRule{}, fmt.Errorf("helper %s does not compile: %w", name, c.Errors)
	}
	fn, ok := c.TypeEnv.Get(ast.MustParseRef("data." + helperPkg + "." + name)).(*types.Function)
	if !ok {
		return helperRule{}, fmt.Errorf("helper %s is not a function", name)
	}
	p, _ := checks[name].parsed()
	return helperRule{text: p.text, decl: &ast.Builtin{Name: name, Decl: fn}}, nil
}

// checkCompiler is the compiler of the self-check: every stage that can
// reject a module (references, local variables, safety, conflicts,
// undefined functions, recursion, types), none that only prepares
// evaluation (indices) or handles what generated code never contains
// (imports, print, template strings, metadata, test rules).
func checkCompiler() *ast.Compiler {
	return ast.NewCompiler().
		WithCapabilities(checkCaps()).
		WithSkipStages(
			ast.StageCheckUnusedImports,
			ast.StageRewriteTemplateStrings,
			ast.StageRewritePrintCalls,
			ast.StageParseMetadataBlocks,
			ast.StageSetAnnotationSet,
			ast.StageRewriteRegoMetadataCalls,
			ast.StageRewriteTestRulesForTracing,
			ast.StageCheckUnsafeBuiltins,
			ast.StageCheckDeprecatedBuiltins,
			ast.StageBuildRuleIndices,
			ast.StageBuildComprehensionIndices,
			ast.StageBuildRequiredCapabilities,
		)
}

// usedBuiltins are the builtins (operators included) that the templates
// and helpers call. The self-check compiles with these only: a template
// that called anything else would fail here, and the type environment the
// compiler builds for every module stays small.
var usedBuiltins = []string{
	"array.slice", "assign", "concat", "contains", "count", "endswith", "eq", "equal",
	"format_int", "gt", "gte", "internal.member_2", "internal.member_3", "is_array",
	"is_boolean", "is_null", "is_number", "is_object", "is_string", "json.marshal",
	"json.unmarshal", "lower", "lt", "lte", "min", "minus", "mul", "neq", "numbers.range",
	"object.get", "object.remove", "plus", "regex.find_all_string_submatch_n", "regex.match",
	"regex.split", "rem", "replace", "sort", "split", "sprintf", "startswith", "substring",
	"sum", "to_number", "trim_left", "trim_right", "trim_suffix", "type_name", "upper",
}

// checkCaps are this OPA's capabilities restricted to usedBuiltins, built
// once.
var checkCaps = sync.OnceValue(func() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	keep := map[string]bool{}
	for _, name := range usedBuiltins {
		keep[name] = true
	}
	kept := caps.Builtins[:0:0]
	for _, b := range caps.Builtins {
		if keep[b.Name] {
			kept = append(kept, b)
		}
	}
	caps.Builtins = kept
	return caps
})

// module assembles, parses, substitutes, formats and checks the module.
func (g *gen) module(pkg, root string, rv *vres) (string, error) {
	const refuse = `else := vs if {
	vs := %s(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]`
	switch {
	case rv.isTrue:
		g.emit("_check(_, _) := []")
	case rv.isFal:
		g.emit("_check(v, p) := %s(v, p)", root)
	case g.rootGuard != nil:
		// a value of the group's type is valid when the group's conditions
		// hold, a value of another type always
		gg := g.rootGuard
		g.emit("_check(v, p) := [] if {\n%s\n} else := [] if {\nnot %s\n} "+refuse,
			strings.Join(g.typed([]string{"v"}, append([]string{gg.test}, gg.conds...)), "\n"), gg.test, root)
	default:
		// the root's conditions are the fast path itself
		g.emit("_check(v, p) := [] if {\n%s\n} "+refuse, strings.Join(g.typed([]string{"v"}, g.inl(rv, "v")), "\n"), root)
	}
	g.emitGuards()
	helpers := make(map[string]helperRule, len(g.helperOrder))
	for _, name := range g.helperOrder {
		h, err := helperRuleOf(name)
		if err != nil {
			return "", &Error{Msg: "internal error: " + err.Error()}
		}
		helpers[name] = h
	}
	var head strings.Builder
	fmt.Fprintf(&head, "package mcpx.rules.%s\n\n", pkg)
	fmt.Fprintf(&head, "violations[key] := vs if {\n\tsome key, t in data.mcpx.steps.rules.targets.%s\n\tvs := _check(t.value, t.path)\n}\n\n", pkg)
	src := head.String() + g.src.String()
	if len(src) > 4*MaxModuleSize {
		return "", &Error{Keyword: "$size", Msg: fmt.Sprintf("generated code would exceed %d bytes", MaxModuleSize)}
	}
	mod, err := ast.ParseModuleWithOpts("generated.rego", src, parserOpts())
	if err != nil {
		return "", &Error{Msg: "internal error: generated code does not parse: " + err.Error()}
	}
	var serr error
	ast.WalkTerms(mod, func(t *ast.Term) bool {
		if v, ok := t.Value.(ast.Var); ok && strings.HasPrefix(string(v), "__c") {
			i, err := strconv.Atoi(string(v[3:]))
			if err != nil || i < 0 || i >= len(g.terms) {
				serr = fmt.Errorf("bad placeholder %s", v)
				return true
			}
			t.Value = g.terms[i].Value
			return true
		}
		return false
	})
	if serr != nil {
		return "", &Error{Msg: "internal error: " + serr.Error()}
	}
	printed, err := format.AstWithOpts(mod, formatOpts())
	if err != nil {
		return "", &Error{Msg: "internal error: formatting generated code: " + err.Error()}
	}
	var out strings.Builder
	out.WriteString(fixQuotes(string(printed)))
	gen := out.Len()
	for _, name := range g.helperOrder {
		out.WriteString("\n")
		out.WriteString(helpers[name].text)
	}
	if out.Len() > MaxModuleSize {
		return "", &Error{Keyword: "$size", Msg: fmt.Sprintf("generated code is %d bytes, over the cap of %d", out.Len(), MaxModuleSize)}
	}
	// the printed generated rules must parse to the very AST that was
	// built (the helpers' text was checked the same way, once)
	check, err := ast.ParseModuleWithOpts("generated.rego", out.String()[:gen], parserOpts())
	if err != nil {
		return "", &Error{Msg: "internal error: formatted code does not parse: " + err.Error()}
	}
	if !check.Equal(mod) {
		return "", &Error{Msg: "internal error: printed module differs from the built AST"}
	}
	// and they must compile, calling the helpers by their types
	decls := make(map[string]*ast.Builtin, len(g.helperOrder))
	for _, name := range g.helperOrder {
		decls[name] = helpers[name].decl
	}
	c := checkCompiler().WithBuiltins(decls)
	if c.Compile(map[string]*ast.Module{"generated.rego": check}); c.Failed() {
		return "", &Error{Msg: "internal error: generated code does not compile: " + c.Errors.Error() + "\n" + out.String()}
	}
	return out.String(), nil
}
