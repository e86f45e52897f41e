package schemarego

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// gen accumulates one module. The Rego text it writes comes only from the
// fixed templates in this package and from identifiers it makes up itself
// (_s12_pattern, …); every value taken from the schema is stored as an
// *ast.Term and referred to in the templates by a placeholder variable
// (__c17) that module() replaces in the parsed AST.
type gen struct {
	raw     *rawIndex
	src     strings.Builder
	terms   []*ast.Term
	names   map[*jsonschema.Schema]string
	trivial map[string]bool // the function always returns []
	stack   map[*jsonschema.Schema]bool
	helpers map[string]bool
	n       int

	vnames map[*jsonschema.Schema]vres
	vstack map[*jsonschema.Schema]bool
	vn     int
	fresh  int

	evals map[evalKey]evalRes
	en    int
}

func newGen(raw *rawIndex) *gen {
	return &gen{
		raw:     raw,
		names:   map[*jsonschema.Schema]string{},
		trivial: map[string]bool{},
		stack:   map[*jsonschema.Schema]bool{},
		helpers: map[string]bool{},
		vnames:  map[*jsonschema.Schema]vres{},
		vstack:  map[*jsonschema.Schema]bool{},
		evals:   map[evalKey]evalRes{},
	}
}

// c stores a JSON value as a term and returns its placeholder.
func (g *gen) c(v any) string {
	val, err := ast.InterfaceToValue(v)
	if err != nil {
		// the schema was already validated as JSON; keep a null rather
		// than fail on a value that only feeds a violation's "expected"
		val = ast.Null{}
	}
	return g.ct(ast.NewTerm(val))
}

func (g *gen) ct(t *ast.Term) string {
	g.terms = append(g.terms, t)
	return fmt.Sprintf("__c%d", len(g.terms)-1)
}

func (g *gen) num(r *big.Int) string {
	return g.ct(ast.NewTerm(ast.Number(r.String())))
}

func (g *gen) emit(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	// OPA prints `f(x) if true` as `f(x) := true`; write it that way so
	// the printed module re-parses to the very AST that was built
	for _, suffix := range []string{" if true", " if {\ntrue\n}"} {
		if head, ok := strings.CutSuffix(text, suffix); ok && !strings.Contains(head, "\n") {
			text = head
			if !strings.Contains(head, ":=") {
				text += " := true"
			}
		}
	}
	g.src.WriteString(text)
	g.src.WriteString("\n\n")
}

func (g *gen) helper(name string) {
	if g.helpers[name] {
		return
	}
	g.helpers[name] = true
	for _, dep := range helperDeps[name] {
		g.helper(dep)
	}
	g.src.WriteString(helperSrc[name])
	g.src.WriteString("\n\n")
}

// viol is the template of one violation of keyword kw at path with value.
func viol(path, value, kw, expected string) string {
	return fmt.Sprintf(`{"path": %s, "value": %s, "constraint": %q, "expected": %s}`, path, value, kw, expected)
}

// checkFn writes `F(v, p) := [violation] if { body }` with a default of []
// and returns the call expression of F.
func (g *gen) checkFn(fn, kw, expected, body string) string {
	body = strings.Join(g.launder(strings.Split(body, "\n"), "v"), "\n")
	g.emit("default %s(_, _) := []", fn)
	g.emit("%s(v, p) := [%s] if {\n%s\n}", fn, viol("p", "v", kw, expected), body)
	return fn + "(v, p)"
}

// listFn writes `F(v, p) := expr if { body }` with a default of [].
func (g *gen) listFn(fn, expr, body string) string {
	body = strings.Join(g.launder(strings.Split(body, "\n"), "v"), "\n")
	g.emit("default %s(_, _) := []", fn)
	g.emit("%s(v, p) := %s if {\n%s\n}", fn, expr, body)
	return fn + "(v, p)"
}

func (g *gen) rawOf(s *jsonschema.Schema) map[string]any {
	if v, ok := g.raw.lookup(s.Location); ok {
		if m, ok := v.(map[string]any); ok {
			return m
		}
	}
	return nil
}

// expected returns the placeholder of keyword kw's value as written, or of
// fallback when the raw schema cannot be found.
func (g *gen) expected(raw map[string]any, kw string, fallback any) string {
	if v, ok := raw[kw]; ok {
		return g.c(v)
	}
	return g.c(fallback)
}

// errAt is an *Error for keyword kw of s (kw "" for s itself).
func errAt(s *jsonschema.Schema, kw, msg string) error {
	ptr := pointerOf(s.Location)
	if kw != "" {
		ptr += "/" + escapeToken(kw)
	}
	return &Error{Keyword: kw, Pointer: ptr, Msg: msg}
}

// schema generates the function of s and returns its name.
func (g *gen) schema(s *jsonschema.Schema) (string, error) {
	if name, ok := g.names[s]; ok {
		return name, nil
	}
	if g.stack[s] {
		return "", &Error{Keyword: "$ref", Pointer: pointerOf(s.Location), Msg: "recursive $ref: the generated Rego cannot recurse"}
	}
	g.stack[s] = true
	defer delete(g.stack, s)

	fn := fmt.Sprintf("_s%d", g.n)
	g.n++
	parts, err := g.parts(s, fn)
	if err != nil {
		return "", err
	}
	switch len(parts) {
	case 0:
		g.emit("%s(_, _) := []", fn)
		g.trivial[fn] = true
	case 1:
		g.emit("%s(v, p) := %s", fn, parts[0])
	default:
		expr := parts[0]
		for _, p := range parts[1:] {
			expr = fmt.Sprintf("array.concat(%s, %s)", expr, p)
		}
		g.emit("%s(v, p) := %s", fn, expr)
	}
	g.names[s] = fn
	return fn, nil
}

// sub generates child and returns its name, and whether it is the schema
// false, or always true.
func (g *gen) sub(child *jsonschema.Schema) (name string, isFalse, isTrue bool, err error) {
	if child.Bool != nil {
		if *child.Bool {
			return "", false, true, nil
		}
		name, err = g.schema(child)
		return name, true, false, err
	}
	name, err = g.schema(child)
	if err != nil {
		return "", false, false, err
	}
	return name, false, g.trivial[name], nil
}

func (g *gen) unsupported(s *jsonschema.Schema) error {
	switch {
	case s.DraftVersion != 2020:
		return errAt(s, "$schema", fmt.Sprintf("only JSON Schema 2020-12 is supported, this schema is draft %d", s.DraftVersion))
	case s.DynamicRef != nil:
		return errAt(s, "$dynamicRef", "$dynamicRef is not supported: it is resolved at evaluation time")
	case s.RecursiveRef != nil:
		return errAt(s, "$recursiveRef", "$recursiveRef is not supported: it is resolved at evaluation time")
	case s.Items != nil || s.AdditionalItems != nil || s.Dependencies != nil:
		return errAt(s, "items", "pre-2020-12 array/dependency keywords are not supported")
	case len(s.Extensions) > 0:
		return errAt(s, "", "vocabulary extensions are not supported")
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// module assembles, parses, substitutes, checks and formats the module.
func (g *gen) module(pkg, root string, rv vres) (string, error) {
	switch {
	case rv.isTrue:
		g.emit("_check(_, _) := []")
	case rv.isFal:
		g.emit("_check(v, p) := %s(v, p)", root)
	default:
		g.emit(`_check(v, p) := [] if {
	%s(v)
} else := vs if {
	vs := %s(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]`, rv.name, root)
	}
	var head strings.Builder
	fmt.Fprintf(&head, "package mcpx.rules.%s\n\n", pkg)
	fmt.Fprintf(&head, "violations[key] := vs if {\n\tsome key, t in data.mcpx.steps.rules.targets.%s\n\tvs := _check(t.value, t.path)\n}\n\n", pkg)
	src := head.String() + g.src.String()
	if len(src) > 4*MaxModuleSize {
		return "", &Error{Keyword: "$size", Msg: fmt.Sprintf("generated code would exceed %d bytes", MaxModuleSize)}
	}
	mod, err := ast.ParseModuleWithOpts("generated.rego", src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return "", &Error{Msg: "internal error: generated code does not parse: " + err.Error()}
	}
	var serr error
	ast.WalkTerms(mod, func(t *ast.Term) bool {
		if v, ok := t.Value.(ast.Var); ok && strings.HasPrefix(string(v), "__c") {
			var i int
			if _, err := fmt.Sscanf(string(v), "__c%d", &i); err != nil || i >= len(g.terms) {
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
	out, err := format.AstWithOpts(mod, format.Opts{RegoVersion: ast.RegoV1})
	if err != nil {
		return "", &Error{Msg: "internal error: formatting generated code: " + err.Error()}
	}
	out = []byte(fixQuotes(string(out)))
	if len(out) > MaxModuleSize {
		return "", &Error{Keyword: "$size", Msg: fmt.Sprintf("generated code is %d bytes, over the cap of %d", len(out), MaxModuleSize)}
	}
	// the printed module must parse and compile on its own
	check, err := ast.ParseModuleWithOpts("generated.rego", string(out), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return "", &Error{Msg: "internal error: formatted code does not parse: " + err.Error()}
	}
	if !check.Equal(mod) {
		return "", &Error{Msg: "internal error: printed module differs from the built AST"}
	}
	c := ast.NewCompiler()
	if c.Compile(map[string]*ast.Module{"generated.rego": check}); c.Failed() {
		return "", &Error{Msg: "internal error: generated code does not compile: " + c.Errors.Error() + "\n" + string(out)}
	}
	return string(out), nil
}
