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
// constraint.

// parts generates the checks of s and returns their call expressions.
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
		parts = append(parts, g.checkFn(name("type"), "type", g.expected(raw, "type", ts), strings.Join(conds, "\n")))
	}
	if s.Enum != nil {
		parts = append(parts, g.checkFn(name("enum"), "enum", g.expected(raw, "enum", s.Enum.Values),
			fmt.Sprintf("not v in %s", g.c(s.Enum.Values))))
	}
	if s.Const != nil {
		parts = append(parts, g.checkFn(name("const"), "const", g.expected(raw, "const", *s.Const),
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
		parts = append(parts, g.checkFn(name(nc.kw), nc.kw, bound,
			fmt.Sprintf("is_number(v)\nv %s %s", nc.op, bound)))
	}
	if s.MultipleOf != nil {
		parts = append(parts, g.multipleOf(s, raw, name("multipleOf")))
	}

	// strings
	if s.MinLength != nil {
		parts = append(parts, g.checkFn(name("minLength"), "minLength", g.expected(raw, "minLength", *s.MinLength),
			fmt.Sprintf("is_string(v)\ncount(v) < %d", *s.MinLength)))
	}
	if s.MaxLength != nil {
		parts = append(parts, g.checkFn(name("maxLength"), "maxLength", g.expected(raw, "maxLength", *s.MaxLength),
			fmt.Sprintf("is_string(v)\ncount(v) > %d", *s.MaxLength)))
	}
	if s.Pattern != nil {
		src := s.Pattern.String()
		if _, err := regexp.Compile(src); err != nil {
			return nil, errAt(s, "pattern", fmt.Sprintf("pattern %q is not RE2: %v", src, err))
		}
		p := g.c(src)
		parts = append(parts, g.checkFn(name("pattern"), "pattern", p,
			fmt.Sprintf("is_string(v)\nnot regex.match(%s, v)", p)))
	}

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
	up, err := g.unevaluatedParts(s, name)
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
func (g *gen) multipleOf(s *jsonschema.Schema, raw map[string]any, fn string) string {
	return g.checkFn(fn, "multipleOf", g.ratTerm(raw, "multipleOf", s.MultipleOf),
		fmt.Sprintf("is_number(v)\nnot _mult(v, %s)", g.multArgs(s)))
}

// multArgs returns the arguments a, r, b, k, pows of _mult for multipleOf
// a/b (see the helper).
func (g *gen) multArgs(s *jsonschema.Schema) string {
	a := new(big.Int).Set(s.MultipleOf.Num())
	b := new(big.Int).Set(s.MultipleOf.Denom())
	r := new(big.Int).Set(a)
	kmax := 0
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
		parts = append(parts, g.checkFn(name("minItems"), "minItems", g.expected(raw, "minItems", *s.MinItems),
			fmt.Sprintf("is_array(v)\ncount(v) < %d", *s.MinItems)))
	}
	if s.MaxItems != nil {
		parts = append(parts, g.checkFn(name("maxItems"), "maxItems", g.expected(raw, "maxItems", *s.MaxItems),
			fmt.Sprintf("is_array(v)\ncount(v) > %d", *s.MaxItems)))
	}
	if s.UniqueItems {
		g.helper("_dup")
		parts = append(parts, g.checkFn(name("uniqueItems"), "uniqueItems", "true", "is_array(v)\n_dup(v)"))
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
		body := fmt.Sprintf("is_array(v)\nx := v[%d]", i)
		if isFalse {
			parts = append(parts, g.listFn(name("prefixItems"), fmt.Sprintf("[%s]", viol(path, "x", "prefixItems", "false")), body))
		} else {
			parts = append(parts, g.listFn(name("prefixItems"), fmt.Sprintf("%s(x, %s)", n, path), body))
		}
	}
	if s.Items2020 != nil {
		n, isFalse, isTrue, err := g.sub(s.Items2020)
		if err != nil {
			return nil, err
		}
		if !isTrue {
			skip := ""
			if len(s.PrefixItems) > 0 {
				skip = fmt.Sprintf("; i >= %d", len(s.PrefixItems))
			}
			path := `concat("/", [p, format_int(i, 10)])`
			var expr string
			if isFalse {
				expr = fmt.Sprintf("[%s | some i, e in v%s]", viol(path, "e", "items", "false"), skip)
			} else {
				expr = fmt.Sprintf("[x | some i, e in v%s; some x in %s(e, %s)]", skip, n, path)
			}
			parts = append(parts, g.listFn(name("items"), expr, "is_array(v)"))
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
			g.emit(`%s(v) := count([1 | some e in v; %s])`, cnt, r.call("e"))
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
			parts = append(parts, g.checkFn(name(kw), kw, exp, fmt.Sprintf("is_array(v)\n%s(v) < %d", cnt, minC)))
		}
		if s.MaxContains != nil {
			parts = append(parts, g.checkFn(name("maxContains"), "maxContains", g.expected(raw, "maxContains", *s.MaxContains),
				fmt.Sprintf("is_array(v)\n%s(v) > %d", cnt, *s.MaxContains)))
		}
	}
	return parts, nil
}

func (g *gen) objectParts(s *jsonschema.Schema, raw map[string]any, name func(string) string) ([]string, error) {
	var parts []string
	if s.MinProperties != nil {
		parts = append(parts, g.checkFn(name("minProperties"), "minProperties", g.expected(raw, "minProperties", *s.MinProperties),
			fmt.Sprintf("is_object(v)\ncount(v) < %d", *s.MinProperties)))
	}
	if s.MaxProperties != nil {
		parts = append(parts, g.checkFn(name("maxProperties"), "maxProperties", g.expected(raw, "maxProperties", *s.MaxProperties),
			fmt.Sprintf("is_object(v)\ncount(v) > %d", *s.MaxProperties)))
	}
	if len(s.Required) > 0 {
		g.helper("_has")
		fn := name("required")
		item := fmt.Sprintf(`{"path": p, "value": v, "constraint": "required", "expected": %s, "detail": concat("", ["missing property ", json.marshal(k)])}`,
			g.expected(raw, "required", s.Required))
		parts = append(parts, g.listFn(fn,
			fmt.Sprintf("[%s | some k in %s; not _has(v, k)]", item, g.c(s.Required)), "is_object(v)"))
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
		item := fmt.Sprintf(`{"path": p, "value": v, "constraint": "dependentRequired", "expected": %s, "detail": concat("", ["missing property ", json.marshal(k), " required by ", %s])}`,
			exp, g.c(fmt.Sprintf("%q", key)))
		parts = append(parts, g.listFn(name("dependentRequired"),
			fmt.Sprintf("[%s | some k in %s; not _has(v, k)]", item, g.c(names)),
			fmt.Sprintf("is_object(v)\n_has(v, %s)", g.c(key))))
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
		body := fmt.Sprintf("is_object(v)\n_has(v, %s)", g.c(key))
		if isFalse {
			parts = append(parts, g.checkFn(name("dependentSchemas"), "dependentSchemas", g.c(map[string]any{key: false}), body))
		} else {
			parts = append(parts, g.listFn(name("dependentSchemas"), n+"(v, p)", body))
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
		body := fmt.Sprintf("is_object(v)\nx := v[%s]", g.c(key))
		if isFalse {
			parts = append(parts, g.listFn(name("properties"), fmt.Sprintf("[%s]", viol(path, "x", "properties", "false")), body))
		} else {
			parts = append(parts, g.listFn(name("properties"), fmt.Sprintf("%s(x, %s)", n, path), body))
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
		path := `concat("/", [p, _esc(k)])`
		re := g.c(p.src)
		var expr string
		if isFalse {
			expr = fmt.Sprintf("[%s | some k, e in v; regex.match(%s, k)]", viol(path, "e", "patternProperties", "false"), re)
		} else {
			expr = fmt.Sprintf("[x | some k, e in v; regex.match(%s, k); some x in %s(e, %s)]", re, n, path)
		}
		parts = append(parts, g.listFn(name("patternProperties"), expr, "is_object(v)"))
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
			fn := name("additionalProperties")
			cond := ""
			if len(s.Properties) > 0 || len(pps) > 0 {
				known := fn + "_known"
				if len(s.Properties) > 0 {
					set := ast.NewSet()
					for k := range s.Properties {
						set.Add(ast.StringTerm(k))
					}
					g.emit("%s(k) if k in %s", known, g.ct(ast.NewTerm(set)))
				}
				for _, p := range pps {
					g.emit("%s(k) if regex.match(%s, k)", known, g.c(p.src))
				}
				cond = fmt.Sprintf("; not %s(k)", known)
			}
			path := `concat("/", [p, _esc(k)])`
			var expr string
			if isFalse {
				expr = fmt.Sprintf("[%s | some k, e in v%s]", viol(path, "e", "additionalProperties", "false"), cond)
			} else {
				expr = fmt.Sprintf("[x | some k, e in v%s; some x in %s(e, %s)]", cond, n, path)
			}
			parts = append(parts, g.listFn(fn, expr, "is_object(v)"))
		}
	}
	if s.PropertyNames != nil {
		n, isFalse, isTrue, err := g.sub(s.PropertyNames)
		if err != nil {
			return nil, err
		}
		if !isTrue {
			g.helper("_esc")
			path := `concat("/", [p, _esc(k)])`
			var expr string
			if isFalse {
				expr = fmt.Sprintf("[%s | some k, _ in v]", viol(path, "k", "propertyNames", "false"))
			} else {
				expr = fmt.Sprintf("[x | some k, _ in v; some x in %s(k, %s)]", n, path)
			}
			parts = append(parts, g.listFn(name("propertyNames"), expr, "is_object(v)"))
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
		var vs []vres
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
			fn := name("anyOf")
			ok := fn + "_ok"
			g.emit("%s(_) if false", ok)
			for _, r := range vs {
				if !r.isFal {
					g.emit(`%s(v) if %s`, ok, r.call("v"))
				}
			}
			calls := make([]string, len(names))
			for i, n := range names {
				calls[i] = n + "(v, p)"
			}
			item := fmt.Sprintf(`{"path": p, "value": v, "constraint": "anyOf", "expected": %s, "detail": concat("", ["no branch matched: ", concat("; ", [_brdetail(i, vs) | some i, vs in [%s]])])}`,
				g.expected(raw, "anyOf", len(names)), strings.Join(calls, ", "))
			parts = append(parts, g.listFn(fn, "["+item+"]", "not "+ok+"(v)"))
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
		fn := name("oneOf")
		exp := g.expected(raw, "oneOf", len(calls))
		g.emit("%s_r(v, p) := [%s]", fn, strings.Join(calls, ", "))
		g.emit("%s_m(r) := [i | some i, vs in r; count(vs) == 0]", fn)
		g.emit(`%s(v, p) := [{"path": p, "value": v, "constraint": "oneOf", "expected": %s, "detail": d}] if {
	r := %s_r(v, p)
	m := %s_m(r)
	count(m) != 1
	d := _oneof_detail(r, m)
}`, fn, exp, fn, fn)
		g.emit("default %s(_, _) := []", fn)
		g.helper("_oneof_detail")
		parts = append(parts, fn+"(v, p)")
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
			parts = append(parts, g.checkFn(name("not"), "not", exp, r.call("v")))
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
			g.emit(`%s(v, p) := %s(v, p) if %s
else := %s(v, p)`, fn, thenN, ri.call("v"), elseN)
			parts = append(parts, fn+"(v, p)")
		case thenN != "":
			parts = append(parts, g.listFn(name("then"), thenN+"(v, p)", ri.call("v")))
		case elseN != "":
			parts = append(parts, g.listFn(name("else"), elseN+"(v, p)", "not "+ri.call("v")))
		}
	}
	return parts, nil
}
