package schemarego

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast path. For every subschema the generator knows "v is valid" as a
// list of conditions on v, evaluated in order and stopping at the first
// that fails; the root's conditions are the first body of _check, so a
// valid value costs one straight-line rule body and builds no violation
// objects. Only an invalid value pays for collecting violations.
//
// A subschema's conditions are copied into the body that uses them (with
// its local variables renamed) when it is used once or is small; otherwise
// they become a predicate _vN(v), written the first time it is called. The
// combinators of the violation functions call the predicates too.
//
// What a body evaluates is what costs: OPA's evaluator charges about a
// microsecond per expression and several per function call, so the
// conditions use the subject directly, bind a member once, and use a
// helper function only for a disjunction (a type guard, an optional member
// without a witness, anyOf, if/then/else, …).

type vres struct {
	name          string
	isTrue, isFal bool
	// conds are the conditions on v, one expression (or block) each; local
	// variables are named xN
	conds []string
	// inline: users copy conds instead of calling name
	inline bool
	// guards are the conditions of conds that are type-guard calls
	guards map[string]*guardGroup
	// known is the one JSON type a valid value has, when conds test it
	// first ("" otherwise)
	known string
}

// valid returns the predicate of s.
func (g *gen) valid(s *jsonschema.Schema) (*vres, error) {
	if s.Bool != nil {
		return &vres{isTrue: *s.Bool, isFal: !*s.Bool}, nil
	}
	if r, ok := g.vnames[s]; ok {
		return r, nil
	}
	if g.vstack[s] {
		return nil, &Error{Keyword: "$ref", Pointer: pointerOf(s.Location), Msg: "recursive $ref: the generated Rego cannot recurse"}
	}
	g.vstack[s] = true
	defer delete(g.vstack, s)
	if err := g.unsupported(s); err != nil {
		return nil, err
	}
	fn := fmt.Sprintf("_v%d", g.vn)
	g.vn++
	conds, guards, err := g.validConds(s, fn)
	if err != nil {
		return nil, err
	}
	r := &vres{name: fn, conds: conds, guards: guards, known: g.knownOf[s]}
	for _, c := range conds {
		if c == "false" {
			r = &vres{isFal: true}
			break
		}
	}
	if len(conds) == 0 {
		r = &vres{isTrue: true}
	}
	// a schema used in one place is copied there; one used in several
	// (through $ref) only when it is small
	r.inline = g.uses[s] <= 1 || (len(conds) <= 4 && !strings.Contains(strings.Join(conds, ""), "\n"))
	g.vnames[s] = r
	return r, nil
}

// countUses counts, for every subschema reachable from s, the places that
// apply it.
func (g *gen) countUses(s *jsonschema.Schema) {
	if s == nil || g.counted[s] {
		return
	}
	g.counted[s] = true
	var kids []*jsonschema.Schema
	kids = append(kids, s.Ref, s.Items2020, s.Contains, s.PropertyNames, s.Not, s.If, s.Then, s.Else,
		s.UnevaluatedProperties, s.UnevaluatedItems)
	kids = append(kids, s.PrefixItems...)
	kids = append(kids, s.AllOf...)
	kids = append(kids, s.AnyOf...)
	kids = append(kids, s.OneOf...)
	for _, c := range s.Properties {
		kids = append(kids, c)
	}
	for _, c := range s.PatternProperties {
		kids = append(kids, c)
	}
	for _, c := range s.DependentSchemas {
		kids = append(kids, c)
	}
	if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		kids = append(kids, ap)
	}
	for _, c := range kids {
		if c != nil {
			g.uses[c]++
			g.countUses(c)
		}
	}
}

func (g *gen) validConds(s *jsonschema.Schema, fn string) ([]string, map[string]*guardGroup, error) {
	var conds []string
	k := 0
	helper := func(kw string) string {
		k++
		return fmt.Sprintf("%s_%s%d", fn, kw, k)
	}
	// the single type the type keyword guarantees, if any, and whether a
	// value of JSON type t can pass it
	known := ""
	allowed := func(string) bool { return true }
	if s.Types != nil {
		ts := s.Types.ToStrings()
		set := map[string]bool{}
		for _, t := range ts {
			set[t] = true
		}
		allowed = func(t string) bool { return set[t] || (t == "number" && set["integer"]) }
		switch {
		case len(ts) == 1 || (len(ts) == 2 && set["number"] && set["integer"]):
			known = ts[0]
			if set["number"] {
				known = "number"
			}
			conds = append(conds, typeTest(g, known))
		case set["integer"] && !set["number"]:
			h := helper("type")
			for _, t := range ts {
				g.emitBody(h+"(v)", []string{"v"}, []string{typeTest(g, t)})
			}
			conds = append(conds, h+"(v)")
		default:
			names := ast.NewSet()
			for _, t := range ts {
				if t != "integer" {
					names.Add(ast.StringTerm(t))
				}
			}
			conds = append(conds, fmt.Sprintf("type_name(v) in %s", g.ct(ast.NewTerm(names))))
		}
	}
	if s.Ref != nil {
		r, err := g.valid(s.Ref)
		if err != nil {
			return nil, nil, err
		}
		conds = append(conds, g.inlK(r, "v", known)...)
		if known == "" && r.known != "" {
			// the referenced schema's type test comes first
			known = r.known
		}
	}
	if s.Enum != nil {
		conds = append(conds, fmt.Sprintf("v in %s", g.c(s.Enum.Values)))
	}
	if s.Const != nil {
		// not v == c, which OPA compiles to the unification v = c: in a
		// comprehension's body that makes v an output, and OPA's
		// comprehension indexing would then evaluate the body with v unbound
		conds = append(conds, fmt.Sprintf("v in [%s]", g.c(*s.Const)))
	}
	conds = append(conds, g.validConfine(s)...)

	// guarded groups: conditions that apply only to one JSON type, in a
	// helper "not of type t, or the conditions hold", written if used
	guards := map[string]*guardGroup{}
	guard := func(t, isT string, cs []string) {
		switch {
		case len(cs) == 0 || !allowed(t):
			// the type keyword already refuses every value of type t
		case known == t || (t == "number" && known == "integer"):
			conds = append(conds, cs...)
		case known != "":
			// a value of type known is not of type t
		default:
			h := helper(t)
			gg := &guardGroup{h, h + "(v)", t, isT + "(v)", cs}
			guards[gg.call] = gg
			g.guards = append(g.guards, gg)
			g.anyFn[h] = true // both bodies start with the type test
			conds = append(conds, gg.call)
		}
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
		return nil, nil, err
	}
	oc, err := g.validObject(s, helper)
	if err != nil {
		return nil, nil, err
	}
	up, ui, err := g.validUnevaluated(s, helper)
	if err != nil {
		return nil, nil, err
	}
	guard("array", "is_array", append(ac, ui...))
	guard("object", "is_object", append(oc, up...))

	cc, err := g.validCombinators(s, helper, known)
	if err != nil {
		return nil, nil, err
	}
	conds = append(conds, cc...)
	g.knownOf[s] = known
	if gg, ok := guards[strings.Join(conds, "")]; ok && s == g.root {
		// the root is one guarded group: _check tests the type itself
		g.rootGuard = gg
	}
	return conds, guards, nil
}

// guardGroup is the helper name(v), "v is not of type t, or the
// conditions hold"; test is the type test. It is written when a module's
// code calls it (emitGuards).
type guardGroup struct {
	name, call, t, test string
	conds               []string
}

// emitGuards writes the guard helpers that the module calls, until none
// that is called is missing.
func (g *gen) emitGuards() {
	done := map[string]bool{}
	for more := true; more; {
		more = false
		for _, gg := range g.guards {
			if done[gg.name] || !strings.Contains(g.src.String(), gg.name+"(") {
				continue
			}
			done[gg.name], more = true, true
			g.emitBody(gg.call, []string{"v"}, []string{"not " + gg.test})
			g.emitBody(gg.call, []string{"v"}, append([]string{gg.test}, gg.conds...))
		}
	}
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
		if !r.isFal {
			g.emitBody(h+"(v)", []string{"v"}, g.inl(r, fmt.Sprintf("v[%d]", i)))
		}
		g.emit("%s(v) if count(v) <= %d", h, i)
		cs = append(cs, h+"(v)")
	}
	if s.Items2020 != nil {
		r, err := g.valid(s.Items2020)
		if err != nil {
			return nil, err
		}
		n := len(s.PrefixItems)
		x := g.local()
		switch {
		case r.isTrue:
		case r.isFal:
			cs = append(cs, fmt.Sprintf("count(v) <= %d", n))
		case n == 0:
			cs = append(cs, fmt.Sprintf("every %s in v {\n%s\n}", x, g.scoped(r, x, "\n")))
		default:
			cs = append(cs, fmt.Sprintf("every %s in array.slice(v, %d, count(v)) {\n%s\n}", x, n, g.scoped(r, x, "\n")))
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
			x := g.local()
			cnt = fmt.Sprintf("count([1 | some %s in v; %s])", x, g.scoped(r, x, "; "))
		}
		switch {
		case minC > 0 && s.MaxContains != nil:
			n := g.local()
			cs = append(cs, n+" := "+cnt, fmt.Sprintf("%s >= %d", n, minC), fmt.Sprintf("%s <= %d", n, *s.MaxContains))
		case minC > 0:
			cs = append(cs, fmt.Sprintf("%s >= %d", cnt, minC))
		case s.MaxContains != nil:
			cs = append(cs, fmt.Sprintf("%s <= %d", cnt, *s.MaxContains))
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
		// presence, not truth: a false or null member is present
		cs = append(cs, fmt.Sprintf("_ = v[%s]", g.c(k)))
	}
	for _, key := range sortedKeys(s.Properties) {
		sub := s.Properties[key]
		r, err := g.valid(sub)
		if err != nil {
			return nil, err
		}
		kt := g.c(key)
		switch {
		case required[key] && r.isTrue:
			cs = append(cs, fmt.Sprintf("_ = v[%s]", kt))
		case required[key] && r.isFal:
			cs = append(cs, "false")
		case required[key]:
			cs = append(cs, g.inl(r, fmt.Sprintf("v[%s]", kt))...)
		case r.isTrue:
		case r.isFal:
			g.helper("_has")
			cs = append(cs, fmt.Sprintf("not _has(v, %s)", kt))
		default:
			cs = append(cs, g.optional(sub, r, key, helper)...)
		}
	}
	for _, key := range sortedKeys(s.DependentRequired) {
		names := s.DependentRequired[key]
		if len(names) == 0 {
			continue
		}
		g.helper("_has")
		h := helper("dependentRequired")
		has := make([]string, len(names))
		for i, n := range names {
			has[i] = fmt.Sprintf("_ = v[%s]", g.c(n))
		}
		g.emitBody(h+"(v)", []string{"v"}, has)
		g.emit("%s(v) if not _has(v, %s)", h, g.c(key))
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
		body := g.inlK(r, "v", "object")
		if len(body) == 0 {
			continue // it holds for every object
		}
		h := helper("dependentSchemas")
		g.emit("%s(v) if not _has(v, %s)", h, g.c(key))
		g.emitBody(h+"(v)", []string{"v"}, body)
		cs = append(cs, h+"(v)")
	}
	pps := sortedPatternProps(s)
	for _, p := range pps {
		r, err := g.valid(p.sch)
		if err != nil {
			return nil, err
		}
		if r.isTrue {
			continue
		}
		h := helper("patternProperties")
		re := g.c(p.src)
		g.emit("%s(k, _) if not regex.match(%s, k)", h, re)
		if !r.isFal {
			g.emitBody(h+"(_, x)", []string{"x"}, g.inl(r, "x"))
		}
		a, b := g.local(), g.local()
		cs = append(cs, fmt.Sprintf("every %s, %s in v {\n%s(%s, %s)\n}", a, b, h, a, b))
	}
	if s.AdditionalProperties != nil {
		r := &vres{}
		switch ap := s.AdditionalProperties.(type) {
		case bool:
			r = &vres{isTrue: ap, isFal: !ap}
		case *jsonschema.Schema:
			var err error
			if r, err = g.valid(ap); err != nil {
				return nil, err
			}
		}
		if !r.isTrue {
			var knownConds []string
			if len(s.Properties) > 0 {
				knownConds = append(knownConds, fmt.Sprintf("k in %s", g.ct(ast.NewTerm(keySet(s.Properties)))))
			}
			for _, p := range pps {
				knownConds = append(knownConds, fmt.Sprintf("regex.match(%s, k)", g.c(p.src)))
			}
			switch {
			case len(knownConds) == 0 && r.isFal:
				cs = append(cs, "count(v) == 0")
			case len(knownConds) == 0:
				x := g.local()
				cs = append(cs, fmt.Sprintf("every %s in v {\n%s\n}", x, g.scoped(r, x, "\n")))
			case len(pps) == 0 && r.isFal:
				// only the declared properties: drop them, nothing may remain
				cs = append(cs, fmt.Sprintf("count(object.remove(v, %s)) == 0", g.ct(ast.NewTerm(keySet(s.Properties)))))
			default:
				h := helper("additionalProperties")
				for _, kc := range knownConds {
					g.emit("%s(k, _) if %s", h, kc)
				}
				if !r.isFal {
					g.emitBody(h+"(_, x)", []string{"x"}, g.inl(r, "x"))
				}
				a, b := g.local(), g.local()
				cs = append(cs, fmt.Sprintf("every %s, %s in v {\n%s(%s, %s)\n}", a, b, h, a, b))
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
			x := g.local()
			cs = append(cs, fmt.Sprintf("every %s, _ in v {\n%s\n}", x, g.scoped(r, x, "\n")))
		}
	}
	return cs, nil
}

func keySet[V any](m map[string]V) ast.Set {
	set := ast.NewSet()
	for k := range m {
		set.Add(ast.StringTerm(k))
	}
	return set
}

// optional is "member key of v is absent or valid against r". With a
// witness w, a value that sub accepts, it is r's conditions on
// object.get(v, key, w): an absent member is replaced by a valid one, and
// no function is called. Without one it is a helper with two bodies, the
// present member's first.
func (g *gen) optional(sub *jsonschema.Schema, r *vres, key string, helper func(string) string) []string {
	kt := g.c(key)
	if w, ok := witness(sub, g.rawOf(sub)); ok {
		x := g.local()
		return append([]string{fmt.Sprintf("%s := object.get(v, %s, %s)", x, kt, g.c(w))}, g.inl(r, x)...)
	}
	g.helper("_has")
	h := helper("prop")
	g.emitBody(h+"(v)", []string{"v"}, g.inl(r, fmt.Sprintf("v[%s]", kt)))
	g.emit("%s(v) if not _has(v, %s)", h, kt)
	return []string{h + "(v)"}
}

// witness returns a small value that s accepts, if one of a few simple
// candidates is: the const, an enum value, a default or example, the
// bounds, or an empty or zero value of each type. santhosh v6 decides; the
// generated predicate agrees with it on every value.
func witness(s *jsonschema.Schema, raw map[string]any) (any, bool) {
	var cands []any
	if s.Const != nil {
		cands = append(cands, *s.Const)
	}
	if s.Enum != nil {
		cands = append(cands, s.Enum.Values...)
	}
	for _, kw := range []string{"default", "minimum", "maximum"} {
		if v, ok := raw[kw]; ok {
			cands = append(cands, v)
		}
	}
	if ex, ok := raw["examples"].([]any); ok {
		cands = append(cands, ex...)
	}
	cands = append(cands, nil, false, true, json.Number("0"), json.Number("1"), "", []any{}, map[string]any{})
	for i, c := range cands {
		if i >= 16 {
			break
		}
		if s.Validate(c) == nil {
			return c, true
		}
	}
	return nil, false
}

func (g *gen) validCombinators(s *jsonschema.Schema, helper func(string) string, known string) ([]string, error) {
	var cs []string
	for _, c := range s.AllOf {
		r, err := g.valid(c)
		if err != nil {
			return nil, err
		}
		cs = append(cs, g.inlK(r, "v", known)...)
	}
	if len(s.AnyOf) > 0 {
		var rs []*vres
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
		case len(rs) == 1:
			cs = append(cs, g.inlK(rs[0], "v", known)...)
		default:
			if c := g.anyOfPred(s, rs, helper("anyOf"), known); c != "true" {
				cs = append(cs, c)
			}
		}
	}
	if len(s.OneOf) > 0 {
		var terms []string
		for _, c := range s.OneOf {
			r, err := g.valid(c)
			if err != nil {
				return nil, err
			}
			switch c := g.inlFlatK(r, "v", known); {
			case r.isFal:
			case len(c) == 0: // the branch holds (for a value of type known)
				terms = append(terms, "1")
			default:
				terms = append(terms, fmt.Sprintf("count([1 | %s])", strings.Join(c, "; ")))
			}
		}
		ones := 0
		for _, t := range terms {
			if t == "1" {
				ones++
			}
		}
		switch {
		case len(terms) == 0 || ones > 1:
			cs = append(cs, "false")
		case ones == 1 && len(terms) == 1:
			// the one branch that always holds
		default:
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
			cs = append(cs, "not "+g.pred(r, "v"))
		}
	}
	if s.If != nil && (s.Then != nil || s.Else != nil) {
		c, err := g.validIf(s, helper, known)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c...)
	}
	return cs, nil
}

// validIf is the condition of if/then/else: "if and then, or not if and
// else", as a helper with an else chain, so the if conditions are tested
// without a call and a failed then is not retried as an else.
func (g *gen) validIf(s *jsonschema.Schema, helper func(string) string, known string) ([]string, error) {
	ri, err := g.valid(s.If)
	if err != nil {
		return nil, err
	}
	branch := func(c *jsonschema.Schema) (*vres, error) {
		if c == nil {
			return &vres{isTrue: true}, nil
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
	// the conditions of each, for a value of type known; empty: it holds
	var ic, tc, ec []string
	if !ri.isFal {
		ic = g.inlK(ri, "v", known)
	}
	if !rt.isFal {
		tc = g.inlK(rt, "v", known)
	}
	if !re.isFal {
		ec = g.inlK(re, "v", known)
	}
	switch {
	case ri.isFal && re.isFal, !ri.isFal && len(ic) == 0 && rt.isFal:
		return []string{"false"}, nil
	case ri.isFal:
		return ec, nil
	case len(ic) == 0:
		return tc, nil
	case !rt.isFal && len(tc) == 0 && !re.isFal && len(ec) == 0:
		return nil, nil
	case rt.isFal && re.isFal:
		return []string{"false"}, nil
	case re.isFal:
		// not if is invalid: if and then must hold
		return append(ic, tc...), nil
	}
	h := helper("if")
	block := func(cs []string) string {
		return " if {\n" + strings.Join(g.typed([]string{"v"}, cs), "\n") + "\n}"
	}
	text := h + "(v)"
	if rt.isFal {
		text += " := false" + block(ic)
	} else {
		text += block(append(append([]string{}, ic...), tc...))
		if len(tc) > 0 {
			text += " else := false" + block(ic)
		}
	}
	// written as OPA prints it: "else := true if" is "else if"
	if len(ec) > 0 {
		text += " else" + block(ec)
	} else {
		text += " else := true"
	}
	g.emit("%s", text)
	return []string{h + "(v)"}, nil
}

// anyOfPred is "v is valid against one of rs" (the branches of s's anyOf
// that are not false) as one expression, v known to be of type known ("" if
// not); the helper it may need, named h, is shared by the predicate and the
// violation function of s when neither knows v's type.
func (g *gen) anyOfPred(s *jsonschema.Schema, rs []*vres, h, known string) string {
	var live []*vres
	var bodies [][]string
	for _, r := range rs {
		if r.isTrue {
			return "true"
		}
		if r.isFal {
			continue
		}
		live = append(live, r)
		if known != "" {
			b := g.inlK(r, "v", known)
			if len(b) == 0 {
				return "true" // the branch holds for a value of type known
			}
			bodies = append(bodies, b)
		}
	}
	switch len(live) {
	case 0:
		return "false"
	case 1:
		return g.pred(live[0], "v")
	}
	key := anyOfKey{s, known}
	if name, ok := g.anyOfs[key]; ok {
		return name + "(v)"
	}
	g.anyOfs[key] = h
	for i, r := range live {
		if known != "" {
			g.emitBody(h+"(v)", []string{"v"}, bodies[i])
		} else {
			g.emitBody(h+"(v)", []string{"v"}, g.inl(r, "v"))
		}
	}
	return h + "(v)"
}

type anyOfKey struct {
	s     *jsonschema.Schema
	known string
}
