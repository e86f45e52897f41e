package schemarego

import (
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// unevaluatedProperties and unevaluatedItems. A property (item) is
// evaluated by a schema when one of its properties, patternProperties,
// additionalProperties or unevaluatedProperties (prefixItems, items,
// contains, unevaluatedItems) keywords applies to it, or when an in-place
// subschema that the value satisfies evaluates it ($ref, allOf, anyOf,
// oneOf, if/then/else, dependentSchemas; never not). Since references are
// not recursive, "k is evaluated by s" is a finite set of Rego rules per
// schema, _pN(v, k) for properties and _qN(v, i) for items: each rule is
// one way k can be evaluated, guarded by the predicates of the subschemas
// it passes through.

type evalRes struct {
	name string // "" when nothing is ever evaluated
	all  bool   // every property (item) is evaluated
}

// inPlace lists the in-place subschemas of s with the conditions under
// which their annotations count (the value satisfies them).
func (g *gen) inPlace(s *jsonschema.Schema) ([]inPlaceChild, error) {
	var out []inPlaceChild
	add := func(c *jsonschema.Schema, pre ...string) error {
		r, err := g.valid(c)
		if err != nil {
			return err
		}
		if r.isFal {
			return nil
		}
		conds := append([]string{}, pre...)
		if !r.isTrue {
			conds = append(conds, g.pred(r, "v"))
		}
		out = append(out, inPlaceChild{c, conds})
		return nil
	}
	if s.Ref != nil {
		if err := add(s.Ref); err != nil {
			return nil, err
		}
	}
	for _, group := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, c := range group {
			if err := add(c); err != nil {
				return nil, err
			}
		}
	}
	for _, key := range sortedKeys(s.DependentSchemas) {
		g.helper("_has")
		if err := add(s.DependentSchemas[key], fmt.Sprintf("_has(v, %s)", g.c(key))); err != nil {
			return nil, err
		}
	}
	if s.If != nil {
		ri, err := g.valid(s.If)
		if err != nil {
			return nil, err
		}
		if err := add(s.If); err != nil {
			return nil, err
		}
		if s.Then != nil && !ri.isFal {
			pre := []string{}
			if !ri.isTrue {
				pre = append(pre, g.pred(ri, "v"))
			}
			if err := add(s.Then, pre...); err != nil {
				return nil, err
			}
		}
		if s.Else != nil && !ri.isTrue {
			pre := []string{}
			if !ri.isFal {
				pre = append(pre, "not "+g.pred(ri, "v"))
			}
			if err := add(s.Else, pre...); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

type inPlaceChild struct {
	s     *jsonschema.Schema
	conds []string
}

// evalProps generates _pN(v, k): property k of object v is evaluated by s
// (with includeU, counting s's own unevaluatedProperties).
func (g *gen) evalProps(s *jsonschema.Schema, includeU bool) (evalRes, error) {
	if s.Bool != nil {
		return evalRes{}, nil
	}
	key := evalKey{s, includeU, false}
	if r, ok := g.evals[key]; ok {
		return r, nil
	}
	if s.AdditionalProperties != nil || (includeU && s.UnevaluatedProperties != nil) {
		g.evals[key] = evalRes{all: true}
		return evalRes{all: true}, nil
	}
	var bodies [][]string
	if len(s.Properties) > 0 {
		set := ast.NewSet()
		for k := range s.Properties {
			set.Add(ast.StringTerm(k))
		}
		bodies = append(bodies, []string{fmt.Sprintf("k in %s", g.ct(ast.NewTerm(set)))})
	}
	for _, p := range sortedPatternProps(s) {
		bodies = append(bodies, []string{fmt.Sprintf("regex.match(%s, k)", g.c(p.src))})
	}
	return g.evalChildren(s, key, "_p", "k", g.evalProps, bodies)
}

// evalItems generates _qN(v, i): item i of array v is evaluated by s.
func (g *gen) evalItems(s *jsonschema.Schema, includeU bool) (evalRes, error) {
	if s.Bool != nil {
		return evalRes{}, nil
	}
	key := evalKey{s, includeU, true}
	if r, ok := g.evals[key]; ok {
		return r, nil
	}
	if s.Items2020 != nil || (includeU && s.UnevaluatedItems != nil) {
		g.evals[key] = evalRes{all: true}
		return evalRes{all: true}, nil
	}
	var bodies [][]string
	if n := len(s.PrefixItems); n > 0 {
		bodies = append(bodies, []string{fmt.Sprintf("i < %d", n)})
	}
	if s.Contains != nil {
		r, err := g.valid(s.Contains)
		if err != nil {
			return evalRes{}, err
		}
		switch {
		case r.isTrue:
			g.evals[key] = evalRes{all: true}
			return evalRes{all: true}, nil
		case !r.isFal:
			bodies = append(bodies, []string{g.pred(r, "v[i]")})
		}
	}
	return g.evalChildren(s, key, "_q", "i", g.evalItems, bodies)
}

// evalChildren adds to bodies what s's in-place subschemas (allOf, anyOf,
// oneOf, if/then/else, $ref…) evaluate, by eval (evalProps or evalItems,
// with the key variable k or i), and emits the helper named prefix+N.
func (g *gen) evalChildren(s *jsonschema.Schema, key evalKey, prefix, v string, eval func(*jsonschema.Schema, bool) (evalRes, error), bodies [][]string) (evalRes, error) {
	children, err := g.inPlace(s)
	if err != nil {
		return evalRes{}, err
	}
	for _, c := range children {
		r, err := eval(c.s, true)
		if err != nil {
			return evalRes{}, err
		}
		switch {
		case r.all && len(c.conds) == 0:
			g.evals[key] = evalRes{all: true}
			return evalRes{all: true}, nil
		case r.all:
			bodies = append(bodies, c.conds)
		case r.name != "":
			bodies = append(bodies, append(append([]string{}, c.conds...), r.name+"(v, "+v+")"))
		}
	}
	return g.evalEmit(key, prefix, bodies)
}

type evalKey struct {
	s        *jsonschema.Schema
	includeU bool
	items    bool
}

func (g *gen) evalEmit(key evalKey, prefix string, bodies [][]string) (evalRes, error) {
	if len(bodies) == 0 {
		g.evals[key] = evalRes{}
		return evalRes{}, nil
	}
	g.en++
	name := fmt.Sprintf("%s%d", prefix, g.en)
	arg := "k"
	if key.items {
		arg = "i"
	}
	for _, b := range bodies {
		g.emitBody(fmt.Sprintf("%s(v, %s)", name, arg), []string{"v", arg}, b)
	}
	r := evalRes{name: name}
	g.evals[key] = r
	return r, nil
}

// validUnevaluated returns the conditions for s's unevaluated* keywords,
// each to be guarded by the value's type.
func (g *gen) validUnevaluated(s *jsonschema.Schema, helper func(string) string) (props, items []string, err error) {
	if s.UnevaluatedProperties != nil {
		c, err := g.unevaluatedCond(s, s.UnevaluatedProperties, "unevaluatedProperties", "k", g.evalProps, helper)
		if err != nil {
			return nil, nil, err
		}
		props = append(props, c...)
	}
	if s.UnevaluatedItems != nil {
		c, err := g.unevaluatedCond(s, s.UnevaluatedItems, "unevaluatedItems", "i", g.evalItems, helper)
		if err != nil {
			return nil, nil, err
		}
		items = append(items, c...)
	}
	return props, items, nil
}

// unevaluatedCond is the condition (none or one) of one unevaluated*
// keyword whose subschema is sub: every member (key var k) or item (i)
// that the rest of s did not evaluate must be valid against sub.
func (g *gen) unevaluatedCond(s, sub *jsonschema.Schema, keyword, key string, eval func(*jsonschema.Schema, bool) (evalRes, error), helper func(string) string) ([]string, error) {
	e, err := eval(s, false)
	if err != nil {
		return nil, err
	}
	r, err := g.valid(sub)
	if err != nil {
		return nil, err
	}
	if e.all || r.isTrue {
		return nil, nil
	}
	h := helper(keyword)
	if e.name != "" {
		g.emit("%s(v, %s, _) if %s(v, %s)", h, key, e.name, key)
	}
	if !r.isFal {
		g.emitBody(h+"(_, _, x)", []string{"x"}, g.inl(r, "x"))
	}
	if e.name == "" && r.isFal {
		return []string{"count(v) == 0"}, nil
	}
	return []string{fmt.Sprintf("every %s, x in v {\n%s(v, %s, x)\n}", key, h, key)}, nil
}

// unevaluatedParts are the violation functions of s's unevaluated*
// keywords.
func (g *gen) unevaluatedParts(s *jsonschema.Schema) ([]string, error) {
	var parts []string
	type spec struct {
		kw, guard, ix string
		sub           *jsonschema.Schema
		eval          func() (evalRes, error)
	}
	for _, sp := range []spec{
		{"unevaluatedProperties", "is_object(v)", "k", s.UnevaluatedProperties, func() (evalRes, error) { return g.evalProps(s, false) }},
		{"unevaluatedItems", "is_array(v)", "i", s.UnevaluatedItems, func() (evalRes, error) { return g.evalItems(s, false) }},
	} {
		if sp.sub == nil {
			continue
		}
		if sp.ix == "k" {
			g.helper("_esc")
		}
		e, err := sp.eval()
		if err != nil {
			return nil, err
		}
		if e.all {
			continue
		}
		n, isFalse, isTrue, err := g.sub(sp.sub)
		if err != nil {
			return nil, err
		}
		if isTrue {
			continue
		}
		ix, x := g.local(), g.local()
		path := fmt.Sprintf(`concat("/", [p, format_int(%s, 10)])`, ix)
		if sp.ix == "k" {
			path = fmt.Sprintf(`concat("/", [p, _esc(%s)])`, ix)
		}
		body := []string{sp.guard, fmt.Sprintf("some %s, %s in v", ix, x)}
		if e.name != "" {
			body = append(body, fmt.Sprintf("not %s(v, %s)", e.name, ix))
		}
		if isFalse {
			parts = append(parts, g.compr(viol(path, x, sp.kw, "false"), body...))
		} else {
			parts = append(parts, g.flat(fmt.Sprintf("%s(%s, %s)", n, x, path), body...))
		}
	}
	return parts, nil
}
