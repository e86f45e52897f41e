package schemarego

import (
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
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
	// helperOrder lists the helpers the module uses, dependencies first
	helperOrder []string
	n           int

	vnames   map[*jsonschema.Schema]*vres
	vstack   map[*jsonschema.Schema]bool
	vemitted map[string]bool
	anyFn    map[string]bool // a one-parameter function that types it as any
	anyOfs   map[anyOfKey]string
	// root is the schema being compiled; rootGuard, when its predicate is
	// one guarded group, that group
	root      *jsonschema.Schema
	rootGuard *guardGroup
	// guards are the type-guard helpers, written if used
	guards  []*guardGroup
	knownOf map[*jsonschema.Schema]string
	words   map[string]*regexp.Regexp
	uses    map[*jsonschema.Schema]int
	counted map[*jsonschema.Schema]bool
	vn      int
	fresh   int

	evals map[evalKey]evalRes
	en    int
}

func newGen(raw *rawIndex) *gen {
	return &gen{
		raw:      raw,
		names:    map[*jsonschema.Schema]string{},
		trivial:  map[string]bool{},
		stack:    map[*jsonschema.Schema]bool{},
		helpers:  map[string]bool{},
		vnames:   map[*jsonschema.Schema]*vres{},
		vstack:   map[*jsonschema.Schema]bool{},
		vemitted: map[string]bool{},
		anyFn:    map[string]bool{},
		anyOfs:   map[anyOfKey]string{},
		knownOf:  map[*jsonschema.Schema]string{},
		words:    map[string]*regexp.Regexp{},
		uses:     map[*jsonschema.Schema]int{},
		counted:  map[*jsonschema.Schema]bool{},
		evals:    map[evalKey]evalRes{},
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

// helper adds the fixed helper rule name (and those it uses) to the
// module; they are printed after the generated rules.
func (g *gen) helper(name string) {
	if g.helpers[name] {
		return
	}
	g.helpers[name] = true
	for _, dep := range helperDeps[name] {
		g.helper(dep)
	}
	g.helperOrder = append(g.helperOrder, name)
}

// viol is the template of one violation of keyword kw at path with value.
func viol(path, value, kw, expected string) string {
	return fmt.Sprintf(`{"path": %s, "value": %s, "constraint": %q, "expected": %s}`, path, value, kw, expected)
}

// check is keyword kw's violation of v at p as an array expression: [the
// violation] when the conditions hold, else [].
func (g *gen) check(kw, expected string, conds ...string) string {
	return g.compr(viol("p", "v", kw, expected), conds...)
}

// compr is the array comprehension [item | conds], typed for v. Each
// comprehension is its own scope for OPA's type checker.
func (g *gen) compr(item string, conds ...string) string {
	if len(conds) == 0 {
		conds = []string{"true"}
	}
	return fmt.Sprintf("[%s | %s]", item, strings.Join(g.typed([]string{"v"}, conds), "; "))
}

// flat is the elements of the array list (a call of a violation function)
// when the conditions hold, else [].
func (g *gen) flat(list string, conds ...string) string {
	x := g.local()
	return g.compr(x, append(conds, fmt.Sprintf("some %s in %s", x, list))...)
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
		// the parts' violations, in order. Each part is bound in the body
		// (OPA parses that faster than a list of comprehensions). OPA's
		// comprehension indexing leaves these comprehensions alone: they
		// read v and p without binding them, since no generated condition
		// unifies v with a value (const is "v in [c]", not "v == c").
		names := make([]string, len(parts))
		for i, p := range parts {
			names[i] = g.local()
			parts[i] = names[i] + " := " + p
		}
		g.emit("%s(v, p) := [x | some vs in [%s]; some x in vs] if {\n%s\n}", fn, strings.Join(names, ", "), strings.Join(parts, "\n"))
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
	case len(s.Extensions) > 1 || (len(s.Extensions) == 1 && confineOf(s) == nil):
		return errAt(s, "", "vocabulary extensions are not supported")
	}
	return confineErr(s)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
