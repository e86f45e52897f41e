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

// The violation functions: _sN(v, p) is the array of violations of v
// against subschema N, p being v's JSON Pointer. They run only for a value
// whose predicate failed (see valid.go), and report every failed
// constraint. Each keyword's check is an array comprehension in _sN's
// value, [violation | conditions], so a schema costs one rule rather than
// a rule and a default per keyword.

// parts generates the checks of s and returns them as array expressions.
func (g *gen) parts(s *jsonschema.Schema, fn string) ([]string, error) {
	if s.Bool != nil {
		if *s.Bool {
			return nil, nil
		}
		return []string{fmt.Sprintf("[%s]", viol("p", "v", "false", "false"))}, nil
	}
	if err := g.unsupported(s); err != nil {
		return nil, err
	}
	raw := g.rawOf(s)
	var parts []string
	k := 0
	name := func(kw string) string {
		k++
		return fmt.Sprintf("%s_%s%d", fn, kw, k)
	}

	if s.Ref != nil {
		n, isFalse, isTrue, err := g.sub(s.Ref)
		if err != nil {
			return nil, err
		}
		switch {
		case isTrue:
		case isFalse:
			parts = append(parts, fmt.Sprintf("[%s]", viol("p", "v", "$ref", "false")))
		default:
			parts = append(parts, n+"(v, p)")
		}
	}

	if s.Types != nil {
		ts := s.Types.ToStrings()
		hasNumber := false
		for _, t := range ts {
			if t == "number" {
				hasNumber = true
			}
		}
		var conds []string
		for _, t := range ts {
			switch t {
			case "null":
				conds = append(conds, "not is_null(v)")
			case "boolean":
				conds = append(conds, "not is_boolean(v)")
			case "number":
				conds = append(conds, "not is_number(v)")
			case "integer":
				if !hasNumber {
					g.helper("_is_int")
					conds = append(conds, "not _is_int(v)")
				}
			case "string":
				conds = append(conds, "not is_string(v)")
			case "array":
				conds = append(conds, "not is_array(v)")
			case "object":
				conds = append(conds, "not is_object(v)")
			}
		}
		parts = append(parts, g.check("type", g.expected(raw, "type", ts), conds...))
	}
	if s.Enum != nil {
		parts = append(parts, g.check("enum", g.expected(raw, "enum", s.Enum.Values),
			fmt.Sprintf("not v in %s", g.c(s.Enum.Values))))
	}
	if s.Const != nil {
		parts = append(parts, g.check("const", g.expected(raw, "const", *s.Const),
			fmt.Sprintf("v != %s", g.c(*s.Const))))
	}

	// numbers
	for _, nc := range []struct {
		kw string
		r  *big.Rat
		op string
	}{
		{"minimum", s.Minimum, "<"},
		{"maximum", s.Maximum, ">"},
		{"exclusiveMinimum", s.ExclusiveMinimum, "<="},
		{"exclusiveMaximum", s.ExclusiveMaximum, ">="},
	} {
		if nc.r == nil {
			continue
		}
		bound := g.ratTerm(raw, nc.kw, nc.r)
		parts = append(parts, g.check(nc.kw, bound, "is_number(v)", fmt.Sprintf("v %s %s", nc.op, bound)))
	}
	if s.MultipleOf != nil {
		parts = append(parts, g.multipleOf(s, raw))
	}

	// strings
	if s.MinLength != nil {
		parts = append(parts, g.check("minLength", g.expected(raw, "minLength", *s.MinLength),
			"is_string(v)", fmt.Sprintf("count(v) < %d", *s.MinLength)))
	}
	if s.MaxLength != nil {
		parts = append(parts, g.check("maxLength", g.expected(raw, "maxLength", *s.MaxLength),
			"is_string(v)", fmt.Sprintf("count(v) > %d", *s.MaxLength)))
	}
	if s.Pattern != nil {
		src := s.Pattern.String()
		if _, err := regexp.Compile(src); err != nil {
			return nil, errAt(s, "pattern", fmt.Sprintf("pattern %q is not RE2: %v", src, err))
		}
		p := g.c(src)
		parts = append(parts, g.check("pattern", p, "is_string(v)", fmt.Sprintf("not regex.match(%s, v)", p)))
	}
	parts = append(parts, g.confineParts(s, raw)...)

	// arrays
	ap, err := g.arrayParts(s, raw, name)
	if err != nil {
		return nil, err
	}
	parts = append(parts, ap...)

	// objects
	op, err := g.objectParts(s, raw, name)
	if err != nil {
		return nil, err
	}
	parts = append(parts, op...)

	// combinators
	cp, err := g.combinatorParts(s, raw, name)
	if err != nil {
		return nil, err
	}
	parts = append(parts, cp...)
	up, err := g.unevaluatedParts(s)
	if err != nil {
		return nil, err
	}
	parts = append(parts, up...)
	return parts, nil
}

// ratTerm is the placeholder of a numeric keyword's value as written, or of
// its exact decimal when the raw schema is not at hand.
func (g *gen) ratTerm(raw map[string]any, kw string, r *big.Rat) string {
	if v, ok := raw[kw]; ok {
		return g.c(v)
	}
	if r.IsInt() {
		return g.num(r.Num())
	}
	// schemas are parsed from decimal text, so the denominator has only
	// the factors 2 and 5 and max(v2, v5) decimals are exact
	digits := 0
	for _, f := range []int64{2, 5} {
		d, c := new(big.Int).Set(r.Denom()), 0
		for new(big.Int).Mod(d, big.NewInt(f)).Sign() == 0 {
			d.Div(d, big.NewInt(f))
			c++
		}
		digits = max(digits, c)
	}
	return g.ct(ast.NewTerm(ast.Number(r.FloatString(digits))))
}

// multipleOf: v = d·10^e with d an integer without trailing zeros (from the
// number's decimal text); with multipleOf = a/b in lowest terms, v/(a/b) is
// an integer iff a·10^-e divides d·b. Every step is integer arithmetic,
// which OPA does exactly on big integers.
func (g *gen) multipleOf(s *jsonschema.Schema, raw map[string]any) string {
	return g.check("multipleOf", g.ratTerm(raw, "multipleOf", s.MultipleOf),
		"is_number(v)", fmt.Sprintf("not _mult(v, %s)", g.multArgs(s)))
}

// multipleOfTerms are the numbers _mult (and the Explainer's
// multipleOfPart) test multipleOf a/b with: a, r (a without its factors 2
// and 5), b, and kmax, the most factors 2 or 5 of a or b.
func multipleOfTerms(s *jsonschema.Schema) (a, r, b *big.Int, kmax int) {
	a = new(big.Int).Set(s.MultipleOf.Num())
	b = new(big.Int).Set(s.MultipleOf.Denom())
	r = new(big.Int).Set(a)
	for _, n := range []*big.Int{a, b} {
		for _, f := range []int64{2, 5} {
			m := new(big.Int).Set(n)
			c := 0
			bf := big.NewInt(f)
			for new(big.Int).Mod(m, bf).Sign() == 0 && m.Sign() != 0 {
				m.Div(m, bf)
				c++
			}
			kmax = max(kmax, c)
		}
	}
	for _, f := range []int64{2, 5} {
		bf := big.NewInt(f)
		for new(big.Int).Mod(r, bf).Sign() == 0 && r.Sign() != 0 {
			r.Div(r, bf)
		}
	}
	return a, r, b, kmax
}

// multArgs returns the arguments a, r, b, k, pows of _mult for multipleOf
// a/b (see the helper).
func (g *gen) multArgs(s *jsonschema.Schema) string {
	a, r, b, kmax := multipleOfTerms(s)
	pows := make([]*ast.Term, kmax+1)
	p := big.NewInt(1)
	for i := range pows {
		pows[i] = ast.NewTerm(ast.Number(p.String()))
		p = new(big.Int).Mul(p, big.NewInt(10))
	}
	g.helper("_mult")
	return fmt.Sprintf("%s, %s, %s, %d, %s", g.num(a), g.num(r), g.num(b), kmax, g.ct(ast.ArrayTerm(pows...)))
}

func (g *gen) arrayParts(s *jsonschema.Schema, raw map[string]any, name func(string) string) ([]string, error) {
	var parts []string
	if s.MinItems != nil {
		parts = append(parts, g.check("minItems", g.expected(raw, "minItems", *s.MinItems),
			"is_array(v)", fmt.Sprintf("count(v) < %d", *s.MinItems)))
	}
	if s.MaxItems != nil {
		parts = append(parts, g.check("maxItems", g.expected(raw, "maxItems", *s.MaxItems),
			"is_array(v)", fmt.Sprintf("count(v) > %d", *s.MaxItems)))
	}
	if s.UniqueItems {
		g.helper("_dup")
		parts = append(parts, g.check("uniqueItems", "true", "is_array(v)", "_dup(v)"))
	}
	for i, c := range s.PrefixItems {
		n, isFalse, isTrue, err := g.sub(c)
		if err != nil {
			return nil, err
		}
		if isTrue {
			continue
		}
		path := fmt.Sprintf(`concat("", [p, "/%d"])`, i)
		x := g.local()
		body := []string{"is_array(v)", fmt.Sprintf("%s := v[%d]", x, i)}
		if isFalse {
			parts = append(parts, g.compr(viol(path, x, "prefixItems", "false"), body...))
		} else {
			parts = append(parts, g.flat(fmt.Sprintf("%s(%s, %s)", n, x, path), body...))
		}
	}
	if s.Items2020 != nil {
		n, isFalse, isTrue, err := g.sub(s.Items2020)
		if err != nil {
			return nil, err
		}
		if !isTrue {
			i, e := g.local(), g.local()
			body := []string{"is_array(v)", fmt.Sprintf("some %s, %s in v", i, e)}
			if len(s.PrefixItems) > 0 {
				body = append(body, fmt.Sprintf("%s >= %d", i, len(s.PrefixItems)))
			}
			path := fmt.Sprintf(`concat("/", [p, format_int(%s, 10)])`, i)
			if isFalse {
				parts = append(parts, g.compr(viol(path, e, "items", "false"), body...))
			} else {
				parts = append(parts, g.flat(fmt.Sprintf("%s(%s, %s)", n, e, path), body...))
			}
		}
	}
	if s.Contains != nil {
		n, isFalse, isTrue, err := g.sub(s.Contains)
		if err != nil {
			return nil, err
		}
		cnt := name("ccount")
		switch {
		case isTrue:
			g.emit("%s(v) := count(v)", cnt)
		case isFalse:
			g.emit("%s(_) := 0", cnt)
		default:
			r, err := g.valid(s.Contains)
			if err != nil {
				return nil, err
			}
			_ = n
			x := g.local()
			g.emit(`%s(v) := count([1 | some %s in v; %s])`, cnt, x, g.scoped(r, x, "; "))
		}
		minC := 1
		if s.MinContains != nil {
			minC = *s.MinContains
		}
		if minC > 0 {
			kw, exp := "contains", g.expected(raw, "contains", true)
			if s.MinContains != nil {
				kw, exp = "minContains", g.expected(raw, "minContains", minC)
			}
			parts = append(parts, g.check(kw, exp, "is_array(v)", fmt.Sprintf("%s(v) < %d", cnt, minC)))
		}
		if s.MaxContains != nil {
			parts = append(parts, g.check("maxContains", g.expected(raw, "maxContains", *s.MaxContains),
				"is_array(v)", fmt.Sprintf("%s(v) > %d", cnt, *s.MaxContains)))
		}
	}
	return parts, nil
}

func (g *gen) objectParts(s *jsonschema.Schema, raw map[string]any, name func(string) string) ([]string, error) {
	var parts []string
	if s.MinProperties != nil {
		parts = append(parts, g.check("minProperties", g.expected(raw, "minProperties", *s.MinProperties),
			"is_object(v)", fmt.Sprintf("count(v) < %d", *s.MinProperties)))
	}
	if s.MaxProperties != nil {
		parts = append(parts, g.check("maxProperties", g.expected(raw, "maxProperties", *s.MaxProperties),
			"is_object(v)", fmt.Sprintf("count(v) > %d", *s.MaxProperties)))
	}
	if len(s.Required) > 0 {
		g.helper("_has")
		k := g.local()
		item := fmt.Sprintf(`{"path": p, "value": v, "constraint": "required", "expected": %s, "detail": concat("", ["missing property ", json.marshal(%s)])}`,
			g.expected(raw, "required", s.Required), k)
		parts = append(parts, g.compr(item, "is_object(v)", fmt.Sprintf("some %s in %s", k, g.c(s.Required)), fmt.Sprintf("not _has(v, %s)", k)))
	}
	for _, key := range sortedKeys(s.DependentRequired) {
		g.helper("_has")
		names := s.DependentRequired[key]
		if len(names) == 0 {
			continue
		}
		exp := g.c(map[string]any{key: names})
		if m, ok := raw["dependentRequired"].(map[string]any); ok {
			if v, ok := m[key]; ok {
				exp = g.c(map[string]any{key: v})
			}
		}
		k := g.local()
		item := fmt.Sprintf(`{"path": p, "value": v, "constraint": "dependentRequired", "expected": %s, "detail": concat("", ["missing property ", json.marshal(%s), " required by ", %s])}`,
			exp, k, g.c(fmt.Sprintf("%q", key)))
		parts = append(parts, g.compr(item, "is_object(v)", fmt.Sprintf("_has(v, %s)", g.c(key)),
			fmt.Sprintf("some %s in %s", k, g.c(names)), fmt.Sprintf("not _has(v, %s)", k)))
	}
	for _, key := range sortedKeys(s.DependentSchemas) {
		g.helper("_has")
		n, isFalse, isTrue, err := g.sub(s.DependentSchemas[key])
		if err != nil {
			return nil, err
		}
		if isTrue {
			continue
		}
		body := []string{"is_object(v)", fmt.Sprintf("_has(v, %s)", g.c(key))}
		if isFalse {
			parts = append(parts, g.check("dependentSchemas", g.c(map[string]any{key: false}), body...))
		} else {
			parts = append(parts, g.flat(n+"(v, p)", body...))
		}
	}
	for _, key := range sortedKeys(s.Properties) {
		n, isFalse, isTrue, err := g.sub(s.Properties[key])
		if err != nil {
			return nil, err
		}
		if isTrue {
			continue
		}
		path := fmt.Sprintf(`concat("", [p, %s])`, g.c("/"+escapeToken(key)))
		x := g.local()
		body := []string{"is_object(v)", fmt.Sprintf("%s := v[%s]", x, g.c(key))}
		if isFalse {
			parts = append(parts, g.compr(viol(path, x, "properties", "false"), body...))
		} else {
			parts = append(parts, g.flat(fmt.Sprintf("%s(%s, %s)", n, x, path), body...))
		}
	}
	pps := sortedPatternProps(s)
	for _, p := range pps {
		if _, err := regexp.Compile(p.src); err != nil {
			return nil, errAt(s, "patternProperties", fmt.Sprintf("pattern %q is not RE2: %v", p.src, err))
		}
		n, isFalse, isTrue, err := g.sub(p.sch)
		if err != nil {
			return nil, err
		}
		if isTrue {
			continue
		}
		g.helper("_esc")
		k, e := g.local(), g.local()
		path := fmt.Sprintf(`concat("/", [p, _esc(%s)])`, k)
		body := []string{"is_object(v)", fmt.Sprintf("some %s, %s in v", k, e), fmt.Sprintf("regex.match(%s, %s)", g.c(p.src), k)}
		if isFalse {
			parts = append(parts, g.compr(viol(path, e, "patternProperties", "false"), body...))
		} else {
			parts = append(parts, g.flat(fmt.Sprintf("%s(%s, %s)", n, e, path), body...))
		}
	}
	if s.AdditionalProperties != nil {
		var n string
		var isFalse, isTrue bool
		switch ap := s.AdditionalProperties.(type) {
		case bool:
			isTrue, isFalse = ap, !ap
		case *jsonschema.Schema:
			var err error
			if n, isFalse, isTrue, err = g.sub(ap); err != nil {
				return nil, err
			}
		}
		if !isTrue {
			g.helper("_esc")
			k, e := g.local(), g.local()
			body := []string{"is_object(v)", fmt.Sprintf("some %s, %s in v", k, e)}
			if len(s.Properties) > 0 || len(pps) > 0 {
				known := name("additionalProperties") + "_known"
				if len(s.Properties) > 0 {
					g.emit("%s(k) if k in %s", known, g.ct(ast.NewTerm(keySet(s.Properties))))
				}
				for _, p := range pps {
					g.emit("%s(k) if regex.match(%s, k)", known, g.c(p.src))
				}
				body = append(body, fmt.Sprintf("not %s(%s)", known, k))
			}
			path := fmt.Sprintf(`concat("/", [p, _esc(%s)])`, k)
			if isFalse {
				parts = append(parts, g.compr(viol(path, e, "additionalProperties", "false"), body...))
			} else {
				parts = append(parts, g.flat(fmt.Sprintf("%s(%s, %s)", n, e, path), body...))
			}
		}
	}
	if s.PropertyNames != nil {
		n, isFalse, isTrue, err := g.sub(s.PropertyNames)
		if err != nil {
			return nil, err
		}
		if !isTrue {
			g.helper("_esc")
			k := g.local()
			path := fmt.Sprintf(`concat("/", [p, _esc(%s)])`, k)
			body := []string{"is_object(v)", fmt.Sprintf("some %s, _ in v", k)}
			if isFalse {
				parts = append(parts, g.compr(viol(path, k, "propertyNames", "false"), body...))
			} else {
				parts = append(parts, g.flat(fmt.Sprintf("%s(%s, %s)", n, k, path), body...))
			}
		}
	}
	return parts, nil
}

type patternProp struct {
	src string
	sch *jsonschema.Schema
}

// sortedPatternProps lists patternProperties sorted by pattern, for a
// stable output.
func sortedPatternProps(s *jsonschema.Schema) []patternProp {
	var pps []patternProp
	for re, sch := range s.PatternProperties {
		pps = append(pps, patternProp{re.String(), sch})
	}
	sort.Slice(pps, func(i, j int) bool { return pps[i].src < pps[j].src })
	return pps
}

func (g *gen) combinatorParts(s *jsonschema.Schema, raw map[string]any, name func(string) string) ([]string, error) {
	var parts []string
	for _, c := range s.AllOf {
		n, isFalse, isTrue, err := g.sub(c)
		if err != nil {
			return nil, err
		}
		switch {
		case isTrue:
		case isFalse:
			parts = append(parts, fmt.Sprintf("[%s]", viol("p", "v", "allOf", "false")))
		default:
			parts = append(parts, n+"(v, p)")
		}
	}
	if len(s.AnyOf) > 0 {
		var names []string
		var vs []*vres
		anyTrue := false
		for _, c := range s.AnyOf {
			n, _, isTrue, err := g.sub(c)
			if err != nil {
				return nil, err
			}
			r, err := g.valid(c)
			if err != nil {
				return nil, err
			}
			// the predicate may know a branch always holds (not: false)
			// when its violation function does not look trivial
			if isTrue || r.isTrue {
				anyTrue = true
				break
			}
			names = append(names, n)
			vs = append(vs, r)
		}
		if !anyTrue {
			g.helper("_brdetail")
			// no branch holds: the negation of the predicate's anyOf
			cond := "true"
			if ok := g.anyOfPred(s, vs, name("anyOf"), ""); ok != "false" {
				cond = "not " + ok
			}
			calls := make([]string, len(names))
			for i, n := range names {
				calls[i] = n + "(v, p)"
			}
			i, vs := g.local(), g.local()
			item := fmt.Sprintf(`{"path": p, "value": v, "constraint": "anyOf", "expected": %s, "detail": concat("", ["no branch matched: ", concat("; ", [_brdetail(%s, %s) | some %s, %s in [%s]])])}`,
				g.expected(raw, "anyOf", len(names)), i, vs, i, vs, strings.Join(calls, ", "))
			parts = append(parts, g.compr(item, cond))
		}
	}
	if len(s.OneOf) > 0 {
		g.helper("_brdetail")
		calls := make([]string, 0, len(s.OneOf))
		for _, c := range s.OneOf {
			n, _, isTrue, err := g.sub(c)
			if err != nil {
				return nil, err
			}
			if isTrue {
				calls = append(calls, "[]")
			} else {
				calls = append(calls, n+"(v, p)")
			}
		}
		g.helper("_oneof_detail")
		// r: each branch's violations; m: the branches that hold
		r, m, i, vs := g.local(), g.local(), g.local(), g.local()
		item := fmt.Sprintf(`{"path": p, "value": v, "constraint": "oneOf", "expected": %s, "detail": _oneof_detail(%s, %s)}`,
			g.expected(raw, "oneOf", len(calls)), r, m)
		parts = append(parts, g.compr(item,
			fmt.Sprintf("%s := [%s]", r, strings.Join(calls, ", ")),
			fmt.Sprintf("%s := [%s | some %s, %s in %s; count(%s) == 0]", m, i, i, vs, r, vs),
			fmt.Sprintf("count(%s) != 1", m)))
	}
	if s.Not != nil {
		n, isFalse, isTrue, err := g.sub(s.Not)
		if err != nil {
			return nil, err
		}
		exp := g.expected(raw, "not", nil)
		switch {
		case isFalse:
		case isTrue:
			parts = append(parts, fmt.Sprintf("[%s]", viol("p", "v", "not", exp)))
		default:
			r, err := g.valid(s.Not)
			if err != nil {
				return nil, err
			}
			_ = n
			parts = append(parts, g.check("not", exp, g.inlFlat(r, "v")...))
		}
	}
	if s.If != nil && (s.Then != nil || s.Else != nil) {
		_, ifFalse, ifTrue, err := g.sub(s.If)
		if err != nil {
			return nil, err
		}
		ri, err := g.valid(s.If)
		if err != nil {
			return nil, err
		}
		branch := func(c *jsonschema.Schema) (string, error) {
			if c == nil {
				return "", nil
			}
			n, _, isTrue, err := g.sub(c)
			if err != nil || isTrue {
				return "", err
			}
			return n, nil
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
		case ifTrue:
			if thenN != "" {
				parts = append(parts, thenN+"(v, p)")
			}
		case ifFalse:
			if elseN != "" {
				parts = append(parts, elseN+"(v, p)")
			}
		case thenN != "" && elseN != "":
			fn := name("if")
			g.emit("%s(v, p) := %s(v, p) if {\n%s\n} else := %s(v, p)",
				fn, thenN, strings.Join(g.typed([]string{"v"}, g.inlFlat(ri, "v")), "\n"), elseN)
			parts = append(parts, fn+"(v, p)")
		case thenN != "":
			parts = append(parts, g.flat(thenN+"(v, p)", g.inlFlat(ri, "v")...))
		case elseN != "":
			parts = append(parts, g.flat(elseN+"(v, p)", "not "+g.pred(ri, "v")))
		}
	}
	return parts, nil
}
