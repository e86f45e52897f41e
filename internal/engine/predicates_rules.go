package engine

import (
	"encoding/json"
	"math"

	"github.com/open-policy-agent/opa/v1/ast"
)

// rulesAccept is the Go form of predicates.rules_accept for the tool's
// facts: every matched rule is compiled (no missing rule), every required
// argument is present, and every value a matched rule checks (read along
// its paths exactly as the rules step reads it) is valid for the rule's
// schema by santhosh v6. A package with no schema, or whose schema did not
// compile, is a no.
func (p *predicates) rulesAccept(ga *callArgs, v, factsV ast.Value) bool {
	in, ok := v.(ast.Object)
	if !ok {
		return false
	}
	facts, ok := factsV.(ast.Object)
	if !ok {
		return false
	}
	args, ok := ga.reader(in)
	if !ok {
		return false
	}
	if missing, ok := field(facts, kMissingRules).(ast.Set); !ok || missing.Len() > 0 {
		return false
	}
	packages, ok := field(facts, kPackages).(ast.Object)
	if !ok {
		return false
	}
	ok = true
	packages.Until(func(pkgT, rulesT *ast.Term) bool {
		pkg, isString := pkgT.Value.(ast.String)
		rules, isArray := rulesT.Value.(*ast.Array)
		ok = isString && isArray && p.verdict(args, string(pkg), rules)
		return !ok
	})
	if !ok {
		return false
	}
	required, ok := field(facts, kRequired).(*ast.Array)
	if !ok {
		return false
	}
	for i := 0; i < required.Len(); i++ {
		if _, present, fine := args.read(required.Elem(i)); !fine || !present {
			return false
		}
	}
	return true
}

// packageAccepts is the Go form of predicates.package_accepts(pkg) for the
// tool's facts: pkg is one of the tool's matched packages, its schema
// compiled, and every value its rules check is valid (rulesAccept for one
// package, without the required and missing-rule checks, which are not the
// package's).
func (p *predicates) packageAccepts(ga *callArgs, v, factsV, pkgV ast.Value) bool {
	in, ok := v.(ast.Object)
	if !ok {
		return false
	}
	facts, ok := factsV.(ast.Object)
	if !ok {
		return false
	}
	pkg, ok := pkgV.(ast.String)
	if !ok {
		return false
	}
	args, ok := ga.reader(in)
	if !ok {
		return false
	}
	packages, ok := field(facts, kPackages).(ast.Object)
	if !ok {
		return false
	}
	rules, ok := field(packages, ast.NewTerm(pkg)).(*ast.Array)
	if !ok {
		return false
	}
	return p.validator(string(pkg)) != nil && p.verdict(args, string(pkg), rules)
}

// vouched is the set of the tool's matched packages for which
// packageAccepts holds: the Go form of package_accepts asks it once per
// evaluation instead of once per package.
func (p *predicates) vouched(ga *callArgs, v, factsV ast.Value) ast.Set {
	out := ast.NewSet()
	facts, ok := factsV.(ast.Object)
	if !ok {
		return out
	}
	packages, ok := field(facts, kPackages).(ast.Object)
	if !ok {
		return out
	}
	packages.Foreach(func(pkgT, _ *ast.Term) {
		if p.packageAccepts(ga, v, factsV, pkgT.Value) {
			out.Add(pkgT)
		}
	})
	return out
}

// verdict reports whether every value the rules of pkg check in the
// arguments is valid for pkg's schema (a package with a value to check
// needs its compiled schema). Kept for the evaluation when args are its
// own: the common case, the argument-rules step and its packages ask the
// same question of the same values.
func (p *predicates) verdict(args argReader, pkg string, rules *ast.Array) bool {
	if args.verdicts != nil {
		if first, ok := args.verdicts[pkg]; ok {
			return first == allValid
		}
	}
	first := allValid
	for i := 0; i < rules.Len() && first == allValid; i++ {
		target, present, fine := args.read(rules.Elem(i))
		if !fine || (present && !p.valid(pkg, target)) {
			first = i
		}
	}
	if args.verdicts != nil {
		args.verdicts[pkg] = first
	}
	return first == allValid
}

// knownValid reports what verdict learned about the value rule i of pkg
// checks in these arguments: known is false when it did not look at it.
func (a argReader) knownValid(pkg string, i int) (valid, known bool) {
	first, ok := a.verdicts[pkg]
	switch {
	case !ok:
		return false, false
	case first == allValid || i < first:
		return true, true
	case i == first:
		return false, true
	}
	return false, false
}

// valid reports whether pkg's compiled schema accepts v. Verdicts on
// scalars (a string of at most maxScalarKey bytes, a number, a boolean,
// null) are kept per package: a gateway's calls repeat such values (a
// mode, a flag, a small count), santhosh's verdict on them never changes,
// and a validation costs allocations. At most memoSize verdicts are kept.
// A value the package's quickCheck decides (a long string, an array of
// strings, for a schema of a few keywords) is not given to santhosh.
func (p *predicates) valid(pkg string, v any) bool {
	s, q := p.checkers(pkg)
	if s == nil {
		return false
	}
	k, keyed := scalarKeyOf(pkg, v)
	if keyed {
		p.mu.RLock()
		ok, hit := p.scalars[k]
		p.mu.RUnlock()
		if hit {
			return ok
		}
	}
	ok, known := false, false
	if q != nil {
		ok, known = q.check(v)
	}
	if !known {
		ok = s.Validate(v) == nil
	}
	if keyed {
		p.mu.Lock()
		if len(p.scalars) < memoSize {
			p.scalars[k] = ok
		}
		p.mu.Unlock()
	}
	return ok
}

// scalarKey identifies a scalar value exactly (its Go type and text or
// bits) for a package.
type scalarKey struct {
	pkg  string
	kind byte
	text string
	bits uint64
}

const maxScalarKey = 64

func scalarKeyOf(pkg string, v any) (scalarKey, bool) {
	switch x := v.(type) {
	case nil:
		return scalarKey{pkg: pkg, kind: 'z'}, true
	case bool:
		k := scalarKey{pkg: pkg, kind: 'b'}
		if x {
			k.bits = 1
		}
		return k, true
	case string:
		return scalarKey{pkg: pkg, kind: 's', text: x}, len(x) <= maxScalarKey
	case json.Number:
		return scalarKey{pkg: pkg, kind: 'n', text: string(x)}, len(x) <= maxScalarKey
	case float64:
		return scalarKey{pkg: pkg, kind: 'f', bits: math.Float64bits(x)}, true
	case int:
		return scalarKey{pkg: pkg, kind: 'i', bits: uint64(int64(x))}, true
	case int64:
		return scalarKey{pkg: pkg, kind: 'i', bits: uint64(x)}, true
	}
	return scalarKey{}, false
}
