package schemarego

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast path. For every subschema the module also has a predicate
// _vN(v), true iff v is valid: one straight-line rule body that stops at
// the first failing condition and builds no violation objects. _check
// returns [] as soon as the root predicate holds, and only an invalid value
// pays for collecting violations. The combinators of the violation
// functions use the predicates too.

type vres struct {
	name          string
	isTrue, isFal bool
	// conds are the predicate's conditions on v when they are few and
	// simple (no local variables), so callers may inline them
	conds []string
}

// call is the Rego expression "x is valid against r" as a function call.
func (r vres) call(x string) string {
	switch {
	case r.isTrue:
		return "true"
	case r.isFal:
		return "false"
	}
	return fmt.Sprintf("%s(%s)", r.name, x)
}

var (
	vWord   = regexp.MustCompile(`\bv\b`)
	aliasRE = regexp.MustCompile(`^x[0-9]+ := `)
	simpleX = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
)

// inl is "x is valid against r" as conditions, one a line, inlined when r
// is simple; x that is not a plain variable is bound to a fresh one first.
func (g *gen) inl(r vres, x string) string {
	if r.conds == nil {
		if simpleX.MatchString(x) {
			return r.call(x)
		}
		return strings.Join(g.launder([]string{r.call("v")}, x), "\n")
	}
	return strings.Join(g.launder(r.conds, x), "\n")
}

// launder gives every condition that mentions v its own copy of arg
// (xN := arg) and rewrites v to that copy. OPA's type checker narrows a
// variable's type with each condition (v == 1 makes v a number, count(v)
// a collection, a call the callee's parameter type) and refuses a body
// whose narrowings conflict, even one that is merely false for some
// values or that negates them; a fresh copy per condition has nothing to
// conflict with. The copies cost one assignment each.
func (g *gen) launder(conds []string, arg string) []string {
	out := make([]string, 0, 2*len(conds))
	for _, c := range conds {
		if !vWord.MatchString(c) || aliasRE.MatchString(c) {
			out = append(out, c)
			continue
		}
		g.fresh++
		x := fmt.Sprintf("x%d", g.fresh)
		out = append(out, fmt.Sprintf("%s := %s", x, arg), vWord.ReplaceAllString(c, x))
	}
	return out
}

// inlSemi is inl for a comprehension body.
func (g *gen) inlSemi(r vres, x string) string {
	return strings.ReplaceAll(g.inl(r, x), "\n", "; ")
}

func inlinable(conds []string) bool {
	if len(conds) > 6 {
		return false
	}
	for _, c := range conds {
		if !vWord.MatchString(c) {
			return false // an every or comprehension would declare an unused variable
		}
		if strings.Contains(c, ":=") || strings.Contains(c, "every") || strings.Contains(c, "some ") ||
			strings.Contains(c, "|") || strings.Contains(c, "\n") {
			return false
		}
	}
	return true
}

// valid generates the predicate of s.
func (g *gen) valid(s *jsonschema.Schema) (vres, error) {
	if s.Bool != nil {
		return vres{isTrue: *s.Bool, isFal: !*s.Bool}, nil
	}
	if r, ok := g.vnames[s]; ok {
		return r, nil
	}
	if g.vstack[s] {
		return vres{}, &Error{Keyword: "$ref", Pointer: pointerOf(s.Location), Msg: "recursive $ref: the generated Rego cannot recurse"}
	}
	g.vstack[s] = true
	defer delete(g.vstack, s)
	if err := g.unsupported(s); err != nil {
		return vres{}, err
	}
	fn := fmt.Sprintf("_v%d", g.vn)
	g.vn++
	conds, err := g.validConds(s, fn)
	if err != nil {
		return vres{}, err
	}
	r := vres{name: fn}
	if inlinable(conds) {
		r.conds = conds
	}
	for _, c := range conds {
		if c == "false" {
			r = vres{isFal: true}
			g.vnames[s] = r
			return r, nil
		}
	}
	if len(conds) == 0 {
		r = vres{isTrue: true}
	} else {
		g.emit("%s(v) if {\n%s\n}", fn, strings.Join(g.launder(conds, "v"), "\n"))
	}
	g.vnames[s] = r
	return r, nil
}

func (g *gen) validConds(s *jsonschema.Schema, fn string) ([]string, error) {
	var conds []string
	k := 0
	helper := func(kw string) string {
		k++
		return fmt.Sprintf("%s_%s%d", fn, kw, k)
	}
	// the single type the type keyword guarantees, if any
	known := ""
	if s.Types != nil {
		ts := s.Types.ToStrings()
		if len(ts) == 1 || (len(ts) == 2 && ts[0] == "number" && ts[1] == "integer") {
			known = ts[0]
			conds = append(conds, typeTest(g, ts[0]))
		} else {
			h := helper("type")
			for _, t := range ts {
				if t == "integer" && strings.Contains(strings.Join(ts, " "), "number") {
					continue
				}
				g.emit("%s(v) if %s", h, typeTest(g, t))
			}
			conds = append(conds, h+"(v)")
		}
	}
	if s.Ref != nil {
		r, err := g.valid(s.Ref)
		if err != nil {
			return nil, err
		}
		if !r.isTrue {
			conds = append(conds, g.inl(r, "v"))
		}
	}
	if s.Enum != nil {
		conds = append(conds, fmt.Sprintf("v in %s", g.c(s.Enum.Values)))
	}
	if s.Const != nil {
		conds = append(conds, fmt.Sprintf("v == %s", g.c(*s.Const)))
	}

	// guarded groups: conditions that apply only to one JSON type
	guard := func(t, isT string, cs []string) {
		if len(cs) == 0 {
			return
		}
		if known == t || (t == "number" && known == "integer") {
			conds = append(conds, cs...)
			return
		}
		h := helper(t)
		g.emit("%s(v) if not %s(v)", h, isT)
		g.emit("%s(v) if {\n%s(v)\n%s\n}", h, isT, strings.Join(g.launder(cs, "v"), "\n"))
		conds = append(conds, h+"(v)")
	}

	// numbers
	var nc []string
	if s.Minimum != nil {
		nc = append(nc, "v >= "+g.ratTerm(g.rawOf(s), "minimum", s.Minimum))
	}
	if s.Maximum != nil {
		nc = append(nc, "v <= "+g.ratTerm(g.rawOf(s), "maximum", s.Maximum))
	}
	if s.ExclusiveMinimum != nil {
		nc = append(nc, "v > "+g.ratTerm(g.rawOf(s), "exclusiveMinimum", s.ExclusiveMinimum))
	}
	if s.ExclusiveMaximum != nil {
		nc = append(nc, "v < "+g.ratTerm(g.rawOf(s), "exclusiveMaximum", s.ExclusiveMaximum))
	}
	if s.MultipleOf != nil {
		nc = append(nc, "_mult(v, "+g.multArgs(s)+")")
	}
	guard("number", "is_number", nc)

	// strings
	var sc []string
	if s.MinLength != nil {
		sc = append(sc, fmt.Sprintf("count(v) >= %d", *s.MinLength))
	}
	if s.MaxLength != nil {
		sc = append(sc, fmt.Sprintf("count(v) <= %d", *s.MaxLength))
	}
	if s.Pattern != nil {
		sc = append(sc, fmt.Sprintf("regex.match(%s, v)", g.c(s.Pattern.String())))
	}
	guard("string", "is_string", sc)

	ac, err := g.validArray(s, helper)
	if err != nil {
		return nil, err
	}
	guard("array", "is_array", ac)

	oc, err := g.validObject(s, helper)
	if err != nil {
		return nil, err
	}
	up, ui, err := g.validUnevaluated(s, helper)
	if err != nil {
		return nil, err
	}
	guard("array", "is_array", ui)
	guard("object", "is_object", append(oc, up...))

	cc, err := g.validCombinators(s, helper)
	if err != nil {
		return nil, err
	}
	conds = append(conds, cc...)
	return conds, nil
}

func typeTest(g *gen, t string) string {
	switch t {
	case "integer":
		g.helper("_is_int")
		return "_is_int(v)"
	case "null":
		return "is_null(v)"
	case "boolean":
		return "is_boolean(v)"
	}
	return fmt.Sprintf("is_%s(v)", t)
}

func (g *gen) validArray(s *jsonschema.Schema, helper func(string) string) ([]string, error) {
	var cs []string
	if s.MinItems != nil {
		cs = append(cs, fmt.Sprintf("count(v) >= %d", *s.MinItems))
	}
	if s.MaxItems != nil {
		cs = append(cs, fmt.Sprintf("count(v) <= %d", *s.MaxItems))
	}
	if s.UniqueItems {
		g.helper("_dup")
		cs = append(cs, "not _dup(v)")
	}
	for i, c := range s.PrefixItems {
		r, err := g.valid(c)
		if err != nil {
			return nil, err
		}
		if r.isTrue {
			continue
		}
		h := helper("prefixItems")
		g.emit("%s(v) if count(v) <= %d", h, i)
		if !r.isFal {
			g.emit("%s(v) if {\n%s\n}", h, g.inl(r, fmt.Sprintf("v[%d]", i)))
		}
		cs = append(cs, h+"(v)")
	}
	if s.Items2020 != nil {
		r, err := g.valid(s.Items2020)
		if err != nil {
			return nil, err
		}
		n := len(s.PrefixItems)
		switch {
		case r.isTrue:
		case r.isFal:
			cs = append(cs, fmt.Sprintf("count(v) <= %d", n))
		case n == 0:
			cs = append(cs, fmt.Sprintf("every x in v {\n%s\n}", g.inl(r, "x")))
		default:
			cs = append(cs, fmt.Sprintf("every x in array.slice(v, %d, count(v)) {\n%s\n}", n, g.inl(r, "x")))
		}
	}
	if s.Contains != nil {
		r, err := g.valid(s.Contains)
		if err != nil {
			return nil, err
		}
		minC := 1
		if s.MinContains != nil {
			minC = *s.MinContains
		}
		cnt := ""
		switch {
		case r.isTrue:
			cnt = "count(v)"
		case r.isFal:
			cnt = "0"
		default:
			cnt = fmt.Sprintf("count([1 | some x in v; %s])", g.inlSemi(r, "x"))
		}
		if minC > 0 || s.MaxContains != nil {
			cs = append(cs, "nc := "+cnt)
			if minC > 0 {
				cs = append(cs, fmt.Sprintf("nc >= %d", minC))
			}
			if s.MaxContains != nil {
				cs = append(cs, fmt.Sprintf("nc <= %d", *s.MaxContains))
			}
		}
	}
	return cs, nil
}

func (g *gen) validObject(s *jsonschema.Schema, helper func(string) string) ([]string, error) {
	var cs []string
	if s.MinProperties != nil {
		cs = append(cs, fmt.Sprintf("count(v) >= %d", *s.MinProperties))
	}
	if s.MaxProperties != nil {
		cs = append(cs, fmt.Sprintf("count(v) <= %d", *s.MaxProperties))
	}
	required := map[string]bool{}
	for _, k := range s.Required {
		required[k] = true
	}
	for _, k := range s.Required {
		if _, ok := s.Properties[k]; ok {
			continue // the property's own check reads it, so it must be present
		}
		g.helper("_has")
		cs = append(cs, fmt.Sprintf("_has(v, %s)", g.c(k)))
	}
	for _, key := range sortedKeys(s.Properties) {
		r, err := g.valid(s.Properties[key])
		if err != nil {
			return nil, err
		}
		kt := g.c(key)
		switch {
		case required[key] && r.isTrue:
			g.helper("_has")
			cs = append(cs, fmt.Sprintf("_has(v, %s)", kt))
		case required[key] && r.isFal:
			cs = append(cs, "false")
		case required[key]:
			cs = append(cs, g.inl(r, fmt.Sprintf("v[%s]", kt)))
		case r.isTrue:
		case r.isFal:
			g.helper("_has")
			cs = append(cs, fmt.Sprintf("not _has(v, %s)", kt))
		default:
			g.helper("_has")
			h := helper("prop")
			g.emit("%s(v) if not _has(v, %s)", h, kt)
			g.emit("%s(v) if {\n%s\n}", h, g.inl(r, fmt.Sprintf("v[%s]", g.c(key))))
			cs = append(cs, h+"(v)")
		}
	}
	for _, key := range sortedKeys(s.DependentRequired) {
		names := s.DependentRequired[key]
		if len(names) == 0 {
			continue
		}
		g.helper("_has")
		h := helper("dependentRequired")
		g.emit("%s(v) if not _has(v, %s)", h, g.c(key))
		has := make([]string, len(names))
		for i, n := range names {
			has[i] = fmt.Sprintf("_has(v, %s)", g.c(n))
		}
		g.emit("%s(v) if {\n%s\n}", h, strings.Join(has, "\n"))
		cs = append(cs, h+"(v)")
	}
	for _, key := range sortedKeys(s.DependentSchemas) {
		r, err := g.valid(s.DependentSchemas[key])
		if err != nil {
			return nil, err
		}
		if r.isTrue {
			continue
		}
		g.helper("_has")
		if r.isFal {
			cs = append(cs, fmt.Sprintf("not _has(v, %s)", g.c(key)))
			continue
		}
		h := helper("dependentSchemas")
		g.emit("%s(v) if not _has(v, %s)", h, g.c(key))
		g.emit("%s(v) if {\n%s\n}", h, g.inl(r, "v"))
		cs = append(cs, h+"(v)")
	}
	pps := sortedPatternProps(s)
	var ppr []vres
	for _, p := range pps {
		r, err := g.valid(p.sch)
		if err != nil {
			return nil, err
		}
		ppr = append(ppr, r)
	}
	for i, p := range pps {
		r := ppr[i]
		if r.isTrue {
			continue
		}
		h := helper("patternProperties")
		re := g.c(p.src)
		g.emit("%s(k, _) if not regex.match(%s, k)", h, re)
		if !r.isFal {
			g.emit("%s(_, x) if {\n%s\n}", h, g.inl(r, "x"))
		}
		cs = append(cs, fmt.Sprintf("every k, x in v {\n%s(k, x)\n}", h))
	}
	if s.AdditionalProperties != nil {
		var r vres
		switch ap := s.AdditionalProperties.(type) {
		case bool:
			r = vres{isTrue: ap, isFal: !ap}
		case *jsonschema.Schema:
			var err error
			if r, err = g.valid(ap); err != nil {
				return nil, err
			}
		}
		if !r.isTrue {
			var knownConds []string
			if len(s.Properties) > 0 {
				set := ast.NewSet()
				for k := range s.Properties {
					set.Add(ast.StringTerm(k))
				}
				knownConds = append(knownConds, fmt.Sprintf("k in %s", g.ct(ast.NewTerm(set))))
			}
			for _, p := range pps {
				knownConds = append(knownConds, fmt.Sprintf("regex.match(%s, k)", g.c(p.src)))
			}
			switch {
			case len(knownConds) == 0 && r.isFal:
				cs = append(cs, "count(v) == 0")
			case len(knownConds) == 0:
				cs = append(cs, fmt.Sprintf("every x in v {\n%s\n}", g.inl(r, "x")))
			case len(knownConds) == 1 && len(s.Properties) > 0 && r.isFal:
				// only the declared properties: drop them, nothing may remain
				set := ast.NewSet()
				for k := range s.Properties {
					set.Add(ast.StringTerm(k))
				}
				cs = append(cs, fmt.Sprintf("count(object.remove(v, %s)) == 0", g.ct(ast.NewTerm(set))))
			default:
				h := helper("additionalProperties")
				for _, kc := range knownConds {
					g.emit("%s(k, _) if %s", h, kc)
				}
				if !r.isFal {
					g.emit("%s(_, x) if {\n%s\n}", h, g.inl(r, "x"))
				}
				cs = append(cs, fmt.Sprintf("every k, x in v {\n%s(k, x)\n}", h))
			}
		}
	}
	if s.PropertyNames != nil {
		r, err := g.valid(s.PropertyNames)
		if err != nil {
			return nil, err
		}
		switch {
		case r.isTrue:
		case r.isFal:
			cs = append(cs, "count(v) == 0")
		default:
			cs = append(cs, fmt.Sprintf("every k, _ in v {\n%s\n}", g.inl(r, "k")))
		}
	}
	return cs, nil
}

func (g *gen) validCombinators(s *jsonschema.Schema, helper func(string) string) ([]string, error) {
	var cs []string
	for _, c := range s.AllOf {
		r, err := g.valid(c)
		if err != nil {
			return nil, err
		}
		if !r.isTrue {
			cs = append(cs, g.inl(r, "v"))
		}
	}
	if len(s.AnyOf) > 0 {
		var rs []vres
		anyTrue := false
		for _, c := range s.AnyOf {
			r, err := g.valid(c)
			if err != nil {
				return nil, err
			}
			anyTrue = anyTrue || r.isTrue
			if !r.isFal {
				rs = append(rs, r)
			}
		}
		switch {
		case anyTrue:
		case len(rs) == 0:
			cs = append(cs, "false")
		default:
			h := helper("anyOf")
			for _, r := range rs {
				g.emit("%s(v) if {\n%s\n}", h, g.inl(r, "v"))
			}
			cs = append(cs, h+"(v)")
		}
	}
	if len(s.OneOf) > 0 {
		var terms []string
		for _, c := range s.OneOf {
			r, err := g.valid(c)
			if err != nil {
				return nil, err
			}
			switch {
			case r.isTrue:
				terms = append(terms, "1")
			case r.isFal:
			default:
				terms = append(terms, fmt.Sprintf("count([1 | %s])", g.inlSemi(r, "v")))
			}
		}
		if len(terms) == 0 {
			cs = append(cs, "false")
		} else {
			cs = append(cs, strings.Join(terms, " + ")+" == 1")
		}
	}
	if s.Not != nil {
		r, err := g.valid(s.Not)
		if err != nil {
			return nil, err
		}
		switch {
		case r.isTrue:
			cs = append(cs, "false")
		case r.isFal:
		default:
			cs = append(cs, "not "+r.call("v"))
		}
	}
	if s.If != nil && (s.Then != nil || s.Else != nil) {
		ri, err := g.valid(s.If)
		if err != nil {
			return nil, err
		}
		branch := func(c *jsonschema.Schema) (vres, error) {
			if c == nil {
				return vres{isTrue: true}, nil
			}
			return g.valid(c)
		}
		rt, err := branch(s.Then)
		if err != nil {
			return nil, err
		}
		re, err := branch(s.Else)
		if err != nil {
			return nil, err
		}
		switch {
		case ri.isTrue:
			if !rt.isTrue {
				cs = append(cs, g.inl(rt, "v"))
			}
		case ri.isFal:
			if !re.isTrue {
				cs = append(cs, g.inl(re, "v"))
			}
		case rt.isTrue && re.isTrue:
		default:
			h := helper("if")
			if !rt.isFal {
				g.emit("%s(v) if {\n%s\n%s\n}", h, g.inl(ri, "v"), g.inl(rt, "v"))
			}
			if !re.isFal {
				g.emit("%s(v) if {\nnot %s\n%s\n}", h, ri.call("v"), g.inl(re, "v"))
			}
			if rt.isFal && re.isFal {
				cs = append(cs, "false")
			} else {
				cs = append(cs, h+"(v)")
			}
		}
	}
	return cs, nil
}
