package schemarego

import (
	"fmt"
	"regexp"
	"strings"
)

// Copying a subschema's conditions into the body that uses them, and
// keeping such bodies acceptable to OPA's type checker (see typed).

var (
	localRE = regexp.MustCompile(`\b(?:v|x[0-9]+)\b`)
	plainRE = regexp.MustCompile(`^(?:v|k|x|x[0-9]+)$`)
	// a condition that types its variable as "any" for OPA's type checker
	anyTyperRE = regexp.MustCompile(`^(?:not )?([A-Za-z_][A-Za-z0-9_]*)\(([a-z0-9]+)\)`)
)

// local is a fresh local variable name.
func (g *gen) local() string {
	g.fresh++
	return fmt.Sprintf("x%d", g.fresh)
}

// call is "x is valid against r" as one expression: a call of r's
// predicate, which is written the first time it is needed.
func (g *gen) call(r *vres, x string) string {
	switch {
	case r.isTrue:
		return "true"
	case r.isFal:
		return "false"
	}
	if !g.vemitted[r.name] {
		g.vemitted[r.name] = true
		g.emitBody(r.name+"(v)", []string{"v"}, r.conds)
	}
	return fmt.Sprintf("%s(%s)", r.name, x)
}

// inl is "x is valid against r" as conditions: r's own, copied, when r is
// inlined, else one call.
func (g *gen) inl(r *vres, x string) []string { return g.inlK(r, x, "") }

// inlK is inl where x is known to be of JSON type known ("" when not): a
// type-guarded group of r's for that type is copied without its guard, and
// one for another type, which holds for every value of type known, is
// left out.
func (g *gen) inlK(r *vres, x, known string) []string {
	switch {
	case r.isTrue:
		return nil
	case r.isFal:
		return []string{"false"}
	case !r.inline:
		return []string{g.call(r, x)}
	}
	conds := r.conds
	if known != "" && len(r.guards) > 0 {
		conds = make([]string, 0, len(r.conds))
		for _, c := range r.conds {
			gg, ok := r.guards[c]
			switch {
			case !ok:
				conds = append(conds, c)
			case gg.t == known || (gg.t == "number" && known == "integer"):
				conds = append(conds, gg.conds...)
			}
		}
	}
	if len(conds) > 0 && !g.wordRE("v").MatchString(strings.Join(conds, "\n")) {
		// conditions that do not read v (1 == 1): a copy would leave the
		// variable x unused, which OPA refuses where x is declared (every,
		// some); the predicate may ignore its argument
		return []string{g.call(r, x)}
	}
	return g.subst(conds, x)
}

// inlFlat is inl for a comprehension body: conditions that span lines
// are called instead, and none is "true" (r holds when the violation
// functions do not see it: a predicate may know more).
func (g *gen) inlFlat(r *vres, x string) []string {
	if cs := g.inlFlatK(r, x, ""); len(cs) > 0 {
		return cs
	}
	return []string{"true"}
}

func (g *gen) inlFlatK(r *vres, x, known string) []string {
	cs := g.inlK(r, x, known)
	for _, c := range cs {
		if strings.Contains(c, "\n") {
			return []string{g.call(r, x)}
		}
	}
	return cs
}

// subst copies conds for subject x: every local variable gets a fresh name
// and v becomes x; an x that is not a plain variable (a member v[k], a
// call) is bound to a fresh local first, which costs the same one
// expression that OPA would spend evaluating the reference anyway.
func (g *gen) subst(conds []string, x string) []string {
	out := make([]string, 0, len(conds)+1)
	if !plainRE.MatchString(x) {
		y := g.local()
		out = append(out, y+" := "+x)
		x = y
	}
	names := map[string]string{}
	for _, c := range conds {
		out = append(out, localRE.ReplaceAllStringFunc(c, func(m string) string {
			if m == "v" {
				return x
			}
			n, ok := names[m]
			if !ok {
				n = g.local()
				names[m] = n
			}
			return n
		}))
	}
	return out
}

// typed returns body with `type_name(p)` in front for each parameter p
// whose first use would narrow its type. OPA's type checker gives an
// untyped variable the type its first use expects (v == 1 makes v a
// number, count(v) a collection, regex.match a string, a call its
// parameter's type) and then refuses a later use that expects another
// type, even in a condition that is merely false for some values. A type
// test (is_string(v), type_name(v), or a call of a function whose
// parameter is typed that way) types v as any, after which nothing
// narrows it; a body that mentions p once cannot conflict.
func (g *gen) typed(params []string, body []string) []string {
	var pre []string
	for _, p := range params {
		if !g.needsTyping(p, body) {
			continue
		}
		pre = append(pre, fmt.Sprintf("type_name(%s)", p))
	}
	return append(pre, body...)
}

// needsTyping reports whether a use of p in body could narrow p's type
// before another use of p: the first use other than as the head of a
// reference (p.a, p[0], which does not narrow p, though it is checked
// against a narrowed p) that is not the argument of a type test, followed
// by any other use.
func (g *gen) needsTyping(p string, body []string) bool {
	re := g.wordRE(p)
	narrowed := false
	for _, c := range body {
		for _, m := range re.FindAllStringIndex(c, -1) {
			if narrowed {
				return true
			}
			if m[1] < len(c) && (c[m[1]] == '.' || c[m[1]] == '[') {
				continue
			}
			if g.typesAny(c, p) {
				return false
			}
			narrowed = true
		}
	}
	return false
}

// wordRE matches the variable p.
func (g *gen) wordRE(p string) *regexp.Regexp {
	re, ok := g.words[p]
	if !ok {
		re = regexp.MustCompile(`\b` + regexp.QuoteMeta(p) + `\b`)
		g.words[p] = re
	}
	return re
}

// typesAny reports whether condition c starts with a test that types p as
// any.
func (g *gen) typesAny(c, p string) bool {
	m := anyTyperRE.FindStringSubmatch(c)
	if m == nil || m[2] != p {
		return false
	}
	return strings.HasPrefix(m[1], "is_") || m[1] == "type_name" || m[1] == "_is_int" || g.anyFn[m[1]]
}

// scoped is "x is valid against r" as the body of an every or a
// comprehension that declares x, joined with sep (one line for a
// comprehension). A type test in front of such a body does not reach a
// comprehension nested in it, so conditions with a comprehension that reads
// x are called, as a function's parameter, instead.
func (g *gen) scoped(r *vres, x, sep string) string {
	var body []string
	if sep == "\n" {
		body = g.inl(r, x)
	} else {
		body = g.inlFlat(r, x)
	}
	re := g.wordRE(x)
	for _, c := range body {
		if strings.Contains(c, "|") && re.MatchString(c) {
			body = []string{g.call(r, x)}
			break
		}
	}
	return strings.Join(g.typed([]string{x}, body), sep)
}

// emitBody writes `head if { body }`, typed for params, and records
// whether a one-parameter function keeps its parameter typed as any.
func (g *gen) emitBody(head string, params []string, body []string) {
	if len(body) == 0 {
		body = []string{"true"}
	}
	body = g.typed(params, body)
	if name, _, ok := strings.Cut(head, "("); ok && len(params) == 1 && head == name+"("+params[0]+")" {
		re := g.wordRE(params[0])
		first := true
		for _, c := range body {
			if re.MatchString(c) {
				first = g.typesAny(c, params[0])
				break
			}
		}
		if prev, seen := g.anyFn[name]; !seen || prev {
			g.anyFn[name] = first
		}
	}
	if len(body) == 1 && !strings.Contains(body[0], "\n") {
		g.emit("%s if %s", head, body[0])
		return
	}
	g.emit("%s if {\n%s\n}", head, strings.Join(body, "\n"))
}

// pred is "x is valid against r" as one expression, which `not` may
// precede: r's single condition when it is a plain test, else a call.
func (g *gen) pred(r *vres, x string) string {
	if r.inline && len(r.conds) == 1 && plainRE.MatchString(x) {
		c := r.conds[0]
		if !strings.HasPrefix(c, "not ") && !strings.HasPrefix(c, "_ =") && !strings.Contains(c, ":=") &&
			!strings.Contains(c, "\n") && !strings.Contains(c, "every ") && !strings.Contains(c, "|") {
			return g.subst([]string{c}, x)[0]
		}
	}
	return g.call(r, x)
}
