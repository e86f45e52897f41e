package schemarego

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcpx/mcpx-policy/internal/confine"
)

// The violations in Go. An Explainer reports, for a value a schema
// refuses, the very violations the schema's generated package reports
// (the violation functions of violations.go): the same list in the same
// order, each with the same path, value, constraint, expected value and
// detail. It is built from the same compiled schema and the same raw
// document as the generated module, and it follows violations.go keyword
// by keyword; it judges values with OPA's own comparisons (ast.Compare,
// ast.Term.Equal), counts characters as OPA's count does, and matches
// patterns with Go's regexp as OPA's regex.match does. Where a combinator
// asks whether a value is valid for a subschema (anyOf, contains, not,
// if), it asks whether that subschema reports no violation, which is what
// the generated predicate decides (both are the schema's verdict: the
// tests hold the generated fast and full checks to each other and to
// santhosh v6).
//
// The embedded engine uses it to build a refusal's details in Go
// (internal/engine); the tests hold it to the generated Rego on the JSON
// Schema suite and a fuzzer.

// Violation is one violation as a generated package reports it: an object
// {"path", "value", "constraint", "expected"} and, for some constraints,
// "detail".
type Violation struct {
	Path       string
	Value      ast.Value
	Constraint string
	Expected   ast.Value
	// Detail is the violation's "detail" when HasDetail.
	Detail    string
	HasDetail bool
}

// Explainer reports the violations of values against one schema (see
// NewExplainer). Safe for concurrent use.
type Explainer struct{ root *xnode }

// NewExplainer compiles schema as Compile does and returns its Explainer.
// It refuses, with an *Error, every schema Compile refuses and also the
// schemas with unevaluatedProperties or unevaluatedItems (whose
// violations it does not compute: a caller reports those with the Rego).
func NewExplainer(schema any) (*Explainer, error) {
	sch, raw, err := compileSchema(schema)
	if err != nil {
		return nil, err
	}
	b := &xbuilder{raw: raw, nodes: map[*jsonschema.Schema]*xnode{}, stack: map[*jsonschema.Schema]bool{}}
	root, err := b.node(sch)
	if err != nil {
		return nil, err
	}
	return &Explainer{root: root}, nil
}

// Violations returns the violations of v (a JSON value) at JSON Pointer p,
// as the generated package's violation function of the root reports them:
// empty when v is valid.
func (x *Explainer) Violations(v ast.Value, p string) []Violation {
	s := sink{}
	x.root.run(v, p, &s)
	return s.vs
}

// Valid reports whether the schema accepts v (no violation).
func (x *Explainer) Valid(v ast.Value) bool { return x.root.valid(v) }

// AST is the violation as the generated package's object.
func (v Violation) AST() ast.Value {
	o := ast.NewObjectWithCapacity(5)
	o.Insert(ast.InternedTerm("path"), ast.StringTerm(v.Path))
	o.Insert(ast.InternedTerm("value"), ast.NewTerm(v.Value))
	o.Insert(ast.InternedTerm("constraint"), ast.StringTerm(v.Constraint))
	o.Insert(ast.InternedTerm("expected"), ast.NewTerm(v.Expected))
	if v.HasDetail {
		o.Insert(ast.InternedTerm("detail"), ast.StringTerm(v.Detail))
	}
	return o
}

// sink collects violations; with only set it stops at the first (a
// validity question).
type sink struct {
	only bool
	bad  bool
	vs   []Violation
}

// add records a violation; true when the walk may stop.
func (s *sink) add(p string, v ast.Value, kw string, expected ast.Value) bool {
	s.bad = true
	if !s.only {
		s.vs = append(s.vs, Violation{Path: p, Value: v, Constraint: kw, Expected: expected})
	}
	return s.only
}

func (s *sink) addDetail(p string, v ast.Value, kw string, expected ast.Value, detail func() string) bool {
	s.bad = true
	if !s.only {
		s.vs = append(s.vs, Violation{Path: p, Value: v, Constraint: kw, Expected: expected, Detail: detail(), HasDetail: true})
	}
	return s.only
}

// part is one keyword's check of v at p; true when the walk may stop.
type part func(v ast.Value, p string, s *sink) bool

// xnode is one subschema's violation function.
type xnode struct {
	parts []part
}

func (n *xnode) run(v ast.Value, p string, s *sink) bool {
	for _, pt := range n.parts {
		if pt(v, p, s) {
			return true
		}
	}
	return false
}

func (n *xnode) valid(v ast.Value) bool {
	s := sink{only: true}
	n.run(v, "", &s)
	return !s.bad
}

// child is a subschema as a parent keyword sees it (gen.sub): the schema
// true (or one that reports nothing), the schema false, or a node.
type child struct {
	n               *xnode
	isFalse, isTrue bool
}

type xbuilder struct {
	raw   *rawIndex
	nodes map[*jsonschema.Schema]*xnode
	stack map[*jsonschema.Schema]bool
}

var (
	falseValue = ast.Boolean(false)
	trueValue  = ast.Boolean(true)
)

// jsonValue is a schema value as the generator stores it (gen.c).
func jsonValue(v any) ast.Value {
	val, err := ast.InterfaceToValue(v)
	if err != nil {
		return ast.Null{}
	}
	return val
}

// expected is keyword kw's value as written, or fallback (gen.expected).
func expected(raw map[string]any, kw string, fallback any) ast.Value {
	if v, ok := raw[kw]; ok {
		return jsonValue(v)
	}
	return jsonValue(fallback)
}

func (b *xbuilder) rawOf(s *jsonschema.Schema) map[string]any {
	if v, ok := b.raw.lookup(s.Location); ok {
		if m, ok := v.(map[string]any); ok {
			return m
		}
	}
	return nil
}

func (b *xbuilder) sub(c *jsonschema.Schema) (child, error) {
	if c.Bool != nil {
		if *c.Bool {
			return child{isTrue: true}, nil
		}
		n, err := b.node(c)
		return child{n: n, isFalse: true}, err
	}
	n, err := b.node(c)
	if err != nil {
		return child{}, err
	}
	return child{n: n, isTrue: len(n.parts) == 0}, nil
}

// node builds s's violation function (gen.schema and gen.parts).
func (b *xbuilder) node(s *jsonschema.Schema) (*xnode, error) {
	if n, ok := b.nodes[s]; ok {
		return n, nil
	}
	if b.stack[s] {
		return nil, &Error{Keyword: "$ref", Pointer: pointerOf(s.Location), Msg: "recursive $ref: the generated Rego cannot recurse"}
	}
	b.stack[s] = true
	defer delete(b.stack, s)
	n := &xnode{}
	if s.Bool != nil {
		if !*s.Bool {
			n.parts = []part{func(v ast.Value, p string, sk *sink) bool { return sk.add(p, v, "false", falseValue) }}
		}
		b.nodes[s] = n
		return n, nil
	}
	if err := (&gen{}).unsupported(s); err != nil {
		return nil, err
	}
	if s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil {
		return nil, errAt(s, "unevaluatedProperties", "the Go violations do not cover unevaluatedProperties and unevaluatedItems")
	}
	raw := b.rawOf(s)
	var parts []part
	add := func(ps ...part) { parts = append(parts, ps...) }

	if s.Ref != nil {
		c, err := b.sub(s.Ref)
		if err != nil {
			return nil, err
		}
		switch {
		case c.isTrue:
		case c.isFalse:
			add(func(v ast.Value, p string, sk *sink) bool { return sk.add(p, v, "$ref", falseValue) })
		default:
			add(c.n.run)
		}
	}
	if s.Types != nil {
		add(typePart(s, raw))
	}
	if s.Enum != nil {
		vals, ok := jsonValue(s.Enum.Values).(*ast.Array)
		if !ok {
			return nil, errAt(s, "enum", "internal error: enum is not an array")
		}
		exp := expected(raw, "enum", s.Enum.Values)
		add(func(v ast.Value, p string, sk *sink) bool {
			t := ast.NewTerm(v)
			if vals.Until(t.Equal) {
				return false
			}
			return sk.add(p, v, "enum", exp)
		})
	}
	if s.Const != nil {
		c := ast.NewTerm(jsonValue(*s.Const))
		exp := expected(raw, "const", *s.Const)
		add(func(v ast.Value, p string, sk *sink) bool {
			if c.Equal(ast.NewTerm(v)) {
				return false
			}
			return sk.add(p, v, "const", exp)
		})
	}
	for _, nc := range []struct {
		kw   string
		r    *big.Rat
		fail func(int) bool
	}{
		{"minimum", s.Minimum, func(c int) bool { return c < 0 }},
		{"maximum", s.Maximum, func(c int) bool { return c > 0 }},
		{"exclusiveMinimum", s.ExclusiveMinimum, func(c int) bool { return c <= 0 }},
		{"exclusiveMaximum", s.ExclusiveMaximum, func(c int) bool { return c >= 0 }},
	} {
		if nc.r == nil {
			continue
		}
		bound := ratValue(raw, nc.kw, nc.r)
		kw, fail := nc.kw, nc.fail
		add(func(v ast.Value, p string, sk *sink) bool {
			if _, ok := v.(ast.Number); !ok || !fail(v.Compare(bound)) {
				return false
			}
			return sk.add(p, v, kw, bound)
		})
	}
	if s.MultipleOf != nil {
		add(multipleOfPart(s, raw))
	}
	if s.MinLength != nil {
		n, exp := *s.MinLength, expected(raw, "minLength", *s.MinLength)
		add(func(v ast.Value, p string, sk *sink) bool {
			if str, ok := v.(ast.String); !ok || runeCount(str) >= n {
				return false
			}
			return sk.add(p, v, "minLength", exp)
		})
	}
	if s.MaxLength != nil {
		n, exp := *s.MaxLength, expected(raw, "maxLength", *s.MaxLength)
		add(func(v ast.Value, p string, sk *sink) bool {
			if str, ok := v.(ast.String); !ok || runeCount(str) <= n {
				return false
			}
			return sk.add(p, v, "maxLength", exp)
		})
	}
	if s.Pattern != nil {
		src := s.Pattern.String()
		re, err := regexp.Compile(src)
		if err != nil {
			return nil, errAt(s, "pattern", fmt.Sprintf("pattern %q is not RE2: %v", src, err))
		}
		exp := jsonValue(src)
		add(func(v ast.Value, p string, sk *sink) bool {
			if str, ok := v.(ast.String); !ok || re.MatchString(string(str)) {
				return false
			}
			return sk.add(p, v, "pattern", exp)
		})
	}
	add(confineParts(s, raw)...)
	ap, err := b.arrayParts(s, raw)
	if err != nil {
		return nil, err
	}
	add(ap...)
	op, err := b.objectParts(s, raw)
	if err != nil {
		return nil, err
	}
	add(op...)
	cp, err := b.combinatorParts(s, raw)
	if err != nil {
		return nil, err
	}
	add(cp...)
	n.parts = parts
	b.nodes[s] = n
	return n, nil
}

func runeCount(s ast.String) int { return len([]rune(string(s))) }

// typePart: a value of none of the types (integer counting only when
// number is not listed).
func typePart(s *jsonschema.Schema, raw map[string]any) part {
	ts := s.Types.ToStrings()
	hasNumber := false
	for _, t := range ts {
		if t == "number" {
			hasNumber = true
		}
	}
	var tests []func(ast.Value) bool
	for _, t := range ts {
		switch t {
		case "null":
			tests = append(tests, func(v ast.Value) bool { _, ok := v.(ast.Null); return ok })
		case "boolean":
			tests = append(tests, func(v ast.Value) bool { _, ok := v.(ast.Boolean); return ok })
		case "number":
			tests = append(tests, func(v ast.Value) bool { _, ok := v.(ast.Number); return ok })
		case "integer":
			if !hasNumber {
				tests = append(tests, isInt)
			}
		case "string":
			tests = append(tests, func(v ast.Value) bool { _, ok := v.(ast.String); return ok })
		case "array":
			tests = append(tests, func(v ast.Value) bool { _, ok := v.(*ast.Array); return ok })
		case "object":
			tests = append(tests, func(v ast.Value) bool { _, ok := v.(ast.Object); return ok })
		}
	}
	exp := expected(raw, "type", ts)
	return func(v ast.Value, p string, sk *sink) bool {
		for _, t := range tests {
			if t(v) {
				return false
			}
		}
		return sk.add(p, v, "type", exp)
	}
}

// ratValue is a numeric keyword's value as written, or its exact decimal
// (gen.ratTerm).
func ratValue(raw map[string]any, kw string, r *big.Rat) ast.Value {
	if v, ok := raw[kw]; ok {
		return jsonValue(v)
	}
	if r.IsInt() {
		return ast.Number(r.Num().String())
	}
	digits := 0
	for _, f := range []int64{2, 5} {
		d, c := new(big.Int).Set(r.Denom()), 0
		for new(big.Int).Mod(d, big.NewInt(f)).Sign() == 0 {
			d.Div(d, big.NewInt(f))
			c++
		}
		digits = max(digits, c)
	}
	return ast.Number(r.FloatString(digits))
}

var decRE = regexp.MustCompile(`^-?([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$`)

// decimal is the helper _dec: |v| = d·10^e with d an integer without
// trailing zeros (0 for zero), read from the number's JSON text; ok is
// false when the text is not a JSON number.
func decimal(n ast.Number) (d *big.Int, e *big.Int, ok bool) {
	m := decRE.FindStringSubmatch(string(n))
	if m == nil {
		return nil, nil, false
	}
	ds := m[1] + m[2]
	tr := strings.TrimRight(ds, "0")
	digits := strings.TrimLeft(tr, "0")
	d = new(big.Int)
	if digits != "" {
		d.SetString(digits, 10)
	}
	e = new(big.Int)
	if x := m[3]; x != "" {
		neg := strings.HasPrefix(x, "-")
		x = strings.TrimLeft(strings.TrimLeft(x, "+-"), "0")
		if x != "" {
			e.SetString(x, 10)
		}
		if neg {
			e.Neg(e)
		}
	}
	e.Sub(e, big.NewInt(int64(len([]rune(m[2])))))
	e.Add(e, big.NewInt(int64(len(ds)-len(tr))))
	return d, e, true
}

// isInt is the helper _is_int: a number with no fractional part, decided
// on its decimal text.
func isInt(v ast.Value) bool {
	n, ok := v.(ast.Number)
	if !ok {
		return false
	}
	d, e, ok := decimal(n)
	return ok && (d.Sign() == 0 || e.Sign() >= 0)
}

// multipleOfPart: v·b/a is an integer, on exact integers (gen.multipleOf
// and the helper _mult).
func multipleOfPart(s *jsonschema.Schema, raw map[string]any) part {
	a, r, b, kmax := multipleOfTerms(s)
	k := big.NewInt(int64(kmax))
	pow := func(e int64) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(e), nil) }
	mult := func(n ast.Number) bool {
		d, e, ok := decimal(n)
		if !ok {
			return false
		}
		switch {
		case d.Sign() == 0:
			return true
		case e.Cmp(k) >= 0:
			return new(big.Int).Rem(d, r).Sign() == 0
		case e.Sign() >= 0:
			return new(big.Int).Rem(new(big.Int).Mul(d, pow(e.Int64())), a).Sign() == 0
		case new(big.Int).Neg(e).Cmp(k) <= 0:
			return new(big.Int).Rem(new(big.Int).Mul(d, b), new(big.Int).Mul(a, pow(-e.Int64()))).Sign() == 0
		}
		return false
	}
	bound := ratValue(raw, "multipleOf", s.MultipleOf)
	return func(v ast.Value, p string, sk *sink) bool {
		n, ok := v.(ast.Number)
		if !ok || mult(n) {
			return false
		}
		return sk.add(p, v, "multipleOf", bound)
	}
}

// confineParts: pathWithin and urlWithin (the helpers _path_viols and
// _url_viols, whose words internal/confine's Go form shares).
func confineParts(s *jsonschema.Schema, raw map[string]any) []part {
	e := confineOf(s)
	if e == nil {
		return nil
	}
	var parts []part
	if e.path != nil {
		parts = append(parts, confinePart(confine.PathKeyword, expected(raw, confine.PathKeyword, nil), e.path.Check,
			"is not a path (a string)", "is not a path (a string) or a list of paths"))
	}
	if e.url != nil {
		parts = append(parts, confinePart(confine.URLKeyword, expected(raw, confine.URLKeyword, nil), e.url.Check,
			"is not a URL (a string)", "is not a URL (a string) or a list of URLs"))
	}
	return parts
}

func confinePart(kw string, exp ast.Value, check func(string) (bool, string), notItem, notValue string) part {
	return func(v ast.Value, p string, sk *sink) bool {
		switch x := v.(type) {
		case ast.String:
			if _, why := check(string(x)); why != "" {
				return sk.addDetail(p, v, kw, exp, func() string { return why })
			}
			return false
		case *ast.Array:
			for i := 0; i < x.Len(); i++ {
				item := x.Elem(i).Value
				why := notItem
				if str, ok := item.(ast.String); ok {
					_, why = check(string(str))
				}
				if why != "" && sk.addDetail(itemPath(sk, p, i), item, kw, exp, func() string { return why }) {
					return true
				}
			}
			return false
		}
		return sk.addDetail(p, v, kw, exp, func() string { return notValue })
	}
}

// itemPath is concat("/", [p, format_int(i, 10)]), not built for a
// validity question.
func itemPath(sk *sink, p string, i int) string {
	if sk.only {
		return ""
	}
	return p + "/" + strconv.Itoa(i)
}

// keyPath is concat("/", [p, _esc(k)]).
func keyPath(sk *sink, p string, k string) string {
	if sk.only {
		return ""
	}
	return p + "/" + escapeToken(k)
}

func (b *xbuilder) arrayParts(s *jsonschema.Schema, raw map[string]any) ([]part, error) {
	var parts []part
	if s.MinItems != nil {
		n, exp := *s.MinItems, expected(raw, "minItems", *s.MinItems)
		parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
			if a, ok := v.(*ast.Array); !ok || a.Len() >= n {
				return false
			}
			return sk.add(p, v, "minItems", exp)
		})
	}
	if s.MaxItems != nil {
		n, exp := *s.MaxItems, expected(raw, "maxItems", *s.MaxItems)
		parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
			if a, ok := v.(*ast.Array); !ok || a.Len() <= n {
				return false
			}
			return sk.add(p, v, "maxItems", exp)
		})
	}
	if s.UniqueItems {
		parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
			if a, ok := v.(*ast.Array); !ok || !hasDuplicate(a) {
				return false
			}
			return sk.add(p, v, "uniqueItems", trueValue)
		})
	}
	for i, c := range s.PrefixItems {
		ch, err := b.sub(c)
		if err != nil {
			return nil, err
		}
		if ch.isTrue {
			continue
		}
		suffix := fmt.Sprintf("/%d", i)
		parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
			a, ok := v.(*ast.Array)
			if !ok || i >= a.Len() {
				return false
			}
			x := a.Elem(i).Value
			path := ""
			if !sk.only {
				path = p + suffix
			}
			if ch.isFalse {
				return sk.add(path, x, "prefixItems", falseValue)
			}
			return ch.n.run(x, path, sk)
		})
	}
	if s.Items2020 != nil {
		ch, err := b.sub(s.Items2020)
		if err != nil {
			return nil, err
		}
		if !ch.isTrue {
			from := len(s.PrefixItems)
			parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
				a, ok := v.(*ast.Array)
				if !ok {
					return false
				}
				for i := from; i < a.Len(); i++ {
					e := a.Elem(i).Value
					if ch.isFalse {
						if sk.add(itemPath(sk, p, i), e, "items", falseValue) {
							return true
						}
					} else if ch.n.run(e, itemPath(sk, p, i), sk) {
						return true
					}
				}
				return false
			})
		}
	}
	if s.Contains != nil {
		ch, err := b.sub(s.Contains)
		if err != nil {
			return nil, err
		}
		count := func(a *ast.Array) int {
			switch {
			case ch.isTrue:
				return a.Len()
			case ch.isFalse:
				return 0
			}
			n := 0
			for i := 0; i < a.Len(); i++ {
				if ch.n.valid(a.Elem(i).Value) {
					n++
				}
			}
			return n
		}
		minC := 1
		if s.MinContains != nil {
			minC = *s.MinContains
		}
		if minC > 0 {
			kw, exp := "contains", expected(raw, "contains", true)
			if s.MinContains != nil {
				kw, exp = "minContains", expected(raw, "minContains", minC)
			}
			parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
				if a, ok := v.(*ast.Array); !ok || count(a) >= minC {
					return false
				}
				return sk.add(p, v, kw, exp)
			})
		}
		if s.MaxContains != nil {
			maxC, exp := *s.MaxContains, expected(raw, "maxContains", *s.MaxContains)
			parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
				if a, ok := v.(*ast.Array); !ok || count(a) <= maxC {
					return false
				}
				return sk.add(p, v, "maxContains", exp)
			})
		}
	}
	return parts, nil
}

// hasDuplicate is the helper _dup: sorted by OPA's order, two neighbours
// equal.
func hasDuplicate(a *ast.Array) bool {
	ts := make([]*ast.Term, a.Len())
	for i := range ts {
		ts[i] = a.Elem(i)
	}
	sort.SliceStable(ts, func(i, j int) bool { return ast.Compare(ts[i], ts[j]) < 0 })
	for i := 1; i < len(ts); i++ {
		if ts[i].Equal(ts[i-1]) {
			return true
		}
	}
	return false
}

func has(o ast.Object, k *ast.Term) bool { return o.Get(k) != nil }

func (b *xbuilder) objectParts(s *jsonschema.Schema, raw map[string]any) ([]part, error) {
	var parts []part
	if s.MinProperties != nil {
		n, exp := *s.MinProperties, expected(raw, "minProperties", *s.MinProperties)
		parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
			if o, ok := v.(ast.Object); !ok || o.Len() >= n {
				return false
			}
			return sk.add(p, v, "minProperties", exp)
		})
	}
	if s.MaxProperties != nil {
		n, exp := *s.MaxProperties, expected(raw, "maxProperties", *s.MaxProperties)
		parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
			if o, ok := v.(ast.Object); !ok || o.Len() <= n {
				return false
			}
			return sk.add(p, v, "maxProperties", exp)
		})
	}
	if len(s.Required) > 0 {
		exp := expected(raw, "required", s.Required)
		keys := keyTerms(s.Required)
		parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
			o, ok := v.(ast.Object)
			if !ok {
				return false
			}
			for i, k := range keys {
				if !has(o, k) && sk.addDetail(p, v, "required", exp, func() string { return "missing property " + marshal(s.Required[i]) }) {
					return true
				}
			}
			return false
		})
	}
	for _, key := range sortedKeys(s.DependentRequired) {
		names := s.DependentRequired[key]
		if len(names) == 0 {
			continue
		}
		exp := jsonValue(map[string]any{key: names})
		if m, ok := raw["dependentRequired"].(map[string]any); ok {
			if v, ok := m[key]; ok {
				exp = jsonValue(map[string]any{key: v})
			}
		}
		keyT, keys, quoted := ast.StringTerm(key), keyTerms(names), fmt.Sprintf("%q", key)
		parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
			o, ok := v.(ast.Object)
			if !ok || !has(o, keyT) {
				return false
			}
			for i, k := range keys {
				if !has(o, k) && sk.addDetail(p, v, "dependentRequired", exp, func() string {
					return "missing property " + marshal(names[i]) + " required by " + quoted
				}) {
					return true
				}
			}
			return false
		})
	}
	for _, key := range sortedKeys(s.DependentSchemas) {
		ch, err := b.sub(s.DependentSchemas[key])
		if err != nil {
			return nil, err
		}
		if ch.isTrue {
			continue
		}
		keyT, exp := ast.StringTerm(key), jsonValue(map[string]any{key: false})
		parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
			o, ok := v.(ast.Object)
			if !ok || !has(o, keyT) {
				return false
			}
			if ch.isFalse {
				return sk.add(p, v, "dependentSchemas", exp)
			}
			return ch.n.run(v, p, sk)
		})
	}
	for _, key := range sortedKeys(s.Properties) {
		ch, err := b.sub(s.Properties[key])
		if err != nil {
			return nil, err
		}
		if ch.isTrue {
			continue
		}
		keyT, suffix := ast.StringTerm(key), "/"+escapeToken(key)
		parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
			o, ok := v.(ast.Object)
			if !ok {
				return false
			}
			x := o.Get(keyT)
			if x == nil {
				return false
			}
			path := ""
			if !sk.only {
				path = p + suffix
			}
			if ch.isFalse {
				return sk.add(path, x.Value, "properties", falseValue)
			}
			return ch.n.run(x.Value, path, sk)
		})
	}
	pps := sortedPatternProps(s)
	res := make([]*regexp.Regexp, len(pps))
	for i, pp := range pps {
		re, err := regexp.Compile(pp.src)
		if err != nil {
			return nil, errAt(s, "patternProperties", fmt.Sprintf("pattern %q is not RE2: %v", pp.src, err))
		}
		res[i] = re
		ch, err := b.sub(pp.sch)
		if err != nil {
			return nil, err
		}
		if ch.isTrue {
			continue
		}
		parts = append(parts, eachKey(ch, "patternProperties", func(k string) bool { return re.MatchString(k) }))
	}
	if s.AdditionalProperties != nil {
		var ch child
		switch ap := s.AdditionalProperties.(type) {
		case bool:
			ch = child{isTrue: ap, isFalse: !ap}
		case *jsonschema.Schema:
			var err error
			if ch, err = b.sub(ap); err != nil {
				return nil, err
			}
		}
		if !ch.isTrue {
			props := s.Properties
			parts = append(parts, eachKey(ch, "additionalProperties", func(k string) bool {
				if _, ok := props[k]; ok {
					return false
				}
				for _, re := range res {
					if re.MatchString(k) {
						return false
					}
				}
				return true
			}))
		}
	}
	if s.PropertyNames != nil {
		ch, err := b.sub(s.PropertyNames)
		if err != nil {
			return nil, err
		}
		if !ch.isTrue {
			parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
				o, ok := v.(ast.Object)
				if !ok {
					return false
				}
				return o.Until(func(k, _ *ast.Term) bool {
					ks, _ := k.Value.(ast.String)
					path := keyPath(sk, p, string(ks))
					if ch.isFalse {
						return sk.add(path, k.Value, "propertyNames", falseValue)
					}
					return ch.n.run(k.Value, path, sk)
				})
			})
		}
	}
	return parts, nil
}

// eachKey checks every member of an object whose key the filter selects
// against ch, in key order (patternProperties, additionalProperties).
func eachKey(ch child, kw string, selected func(string) bool) part {
	return func(v ast.Value, p string, sk *sink) bool {
		o, ok := v.(ast.Object)
		if !ok {
			return false
		}
		return o.Until(func(k, e *ast.Term) bool {
			ks, isString := k.Value.(ast.String)
			if !isString || !selected(string(ks)) {
				return false
			}
			path := keyPath(sk, p, string(ks))
			if ch.isFalse {
				return sk.add(path, e.Value, kw, falseValue)
			}
			return ch.n.run(e.Value, path, sk)
		})
	}
}

func keyTerms(keys []string) []*ast.Term {
	ts := make([]*ast.Term, len(keys))
	for i, k := range keys {
		ts[i] = ast.StringTerm(k)
	}
	return ts
}

// marshal is OPA's json.marshal of a string.
func marshal(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return `""`
	}
	return string(b)
}

func (b *xbuilder) combinatorParts(s *jsonschema.Schema, raw map[string]any) ([]part, error) {
	var parts []part
	for _, c := range s.AllOf {
		ch, err := b.sub(c)
		if err != nil {
			return nil, err
		}
		switch {
		case ch.isTrue:
		case ch.isFalse:
			parts = append(parts, func(v ast.Value, p string, sk *sink) bool { return sk.add(p, v, "allOf", falseValue) })
		default:
			parts = append(parts, ch.n.run)
		}
	}
	if len(s.AnyOf) > 0 {
		var branches []child
		anyTrue := false
		for _, c := range s.AnyOf {
			ch, err := b.sub(c)
			if err != nil {
				return nil, err
			}
			if ch.isTrue {
				anyTrue = true
				break
			}
			branches = append(branches, ch)
		}
		if !anyTrue {
			exp := expected(raw, "anyOf", len(branches))
			parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
				for _, br := range branches {
					if !br.isFalse && br.n.valid(v) {
						return false
					}
				}
				return sk.addDetail(p, v, "anyOf", exp, func() string {
					details := make([]string, len(branches))
					for i, br := range branches {
						details[i] = branchDetail(i, br.n, v, p)
					}
					return "no branch matched: " + strings.Join(details, "; ")
				})
			})
		}
	}
	if len(s.OneOf) > 0 {
		branches := make([]child, len(s.OneOf))
		for i, c := range s.OneOf {
			ch, err := b.sub(c)
			if err != nil {
				return nil, err
			}
			branches[i] = ch
		}
		exp := expected(raw, "oneOf", len(branches))
		parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
			var matched []int
			for i, br := range branches {
				if br.isTrue || br.n.valid(v) {
					matched = append(matched, i)
				}
			}
			if len(matched) == 1 {
				return false
			}
			return sk.addDetail(p, v, "oneOf", exp, func() string {
				if len(matched) == 0 {
					details := make([]string, len(branches))
					for i, br := range branches {
						details[i] = branchDetail(i, br.n, v, p)
					}
					return "no branch matched: " + strings.Join(details, "; ")
				}
				idx := make([]string, len(matched))
				for i, m := range matched {
					idx[i] = strconv.Itoa(m)
				}
				return "branches " + strings.Join(idx, ", ") + " matched, exactly one must"
			})
		})
	}
	if s.Not != nil {
		ch, err := b.sub(s.Not)
		if err != nil {
			return nil, err
		}
		exp := expected(raw, "not", nil)
		switch {
		case ch.isFalse:
		case ch.isTrue:
			parts = append(parts, func(v ast.Value, p string, sk *sink) bool { return sk.add(p, v, "not", exp) })
		default:
			parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
				if !ch.n.valid(v) {
					return false
				}
				return sk.add(p, v, "not", exp)
			})
		}
	}
	if s.If != nil && (s.Then != nil || s.Else != nil) {
		cond, err := b.sub(s.If)
		if err != nil {
			return nil, err
		}
		branch := func(c *jsonschema.Schema) (*xnode, error) {
			if c == nil {
				return nil, nil
			}
			ch, err := b.sub(c)
			if err != nil || ch.isTrue {
				return nil, err
			}
			return ch.n, nil
		}
		thenN, err := branch(s.Then)
		if err != nil {
			return nil, err
		}
		elseN, err := branch(s.Else)
		if err != nil {
			return nil, err
		}
		switch {
		case cond.isTrue:
			if thenN != nil {
				parts = append(parts, thenN.run)
			}
		case cond.isFalse:
			if elseN != nil {
				parts = append(parts, elseN.run)
			}
		case thenN != nil || elseN != nil:
			parts = append(parts, func(v ast.Value, p string, sk *sink) bool {
				next := elseN
				if cond.n.valid(v) {
					next = thenN
				}
				return next != nil && next.run(v, p, sk)
			})
		}
	}
	return parts, nil
}

// branchDetail is the helper _brdetail(i, vs) for branch n's violations
// of v at p.
func branchDetail(i int, n *xnode, v ast.Value, p string) string {
	s := sink{}
	n.run(v, p, &s)
	if len(s.vs) == 0 {
		return fmt.Sprintf("branch %d matched", i)
	}
	return fmt.Sprintf("branch %d: %s at %s", i, s.vs[0].Constraint, marshal(s.vs[0].Path))
}
