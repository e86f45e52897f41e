package engine

import (
	"fmt"
	"math/big"
	"net"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// overridesPackage is the package of the operators' override modules (the
// config loader, internal/config, admits no other package for them).
const overridesPackage = "data.mcpx.overrides"

// maxGenerated is the most numbers (or addresses) a generator call in an
// operator override may produce.
const maxGenerated = 10000

// The deadline stops most runaway evaluations: OPA checks for cancellation
// between expressions and inside a few builtins. It does not bound memory:
// numbers.range(1, 1e8) is stopped, but only after a 5 s deadline has let it
// build an array of hundreds of megabytes (more with more cores or a longer
// deadline), and some builtins never check at all. So operator overrides,
// the only Rego the operator writes, may call the builtins whose result or
// running time is set by a number rather than by the size of their
// arguments only in a shape whose cost is known at load (docs/overrides.md,
// "What overrides may not do"). The policy's own Rego is not checked.
var generators = map[string]struct {
	// check returns "" when the call's arguments are allowed, else what
	// the builtin needs.
	check func(args []*ast.Term) string
	hint  string
}{
	"numbers.range": {
		check: func(args []*ast.Term) string { return rangeCheck(args[0], args[1], nil) },
		hint:  "iterate a collection with `some i, x in xs` instead",
	},
	"numbers.range_step": {
		check: func(args []*ast.Term) string { return rangeCheck(args[0], args[1], args[2]) },
		hint:  "iterate a collection with `some i, x in xs` instead",
	},
	"net.cidr_expand": {
		check: cidrCheck,
		hint:  "test membership with net.cidr_contains instead",
	},
	"bits.lsh": {
		check: func(args []*ast.Term) string {
			if n, ok := intLiteral(args[1]); !ok || n.Sign() < 0 || n.Cmp(big.NewInt(1024)) > 0 {
				return "its shift must be an integer literal from 0 to 1024, since a larger one asks for any amount of memory at once"
			}
			return ""
		},
		hint: "compare or mask the number instead",
	},
	"strings.render_template": {
		check: func([]*ast.Term) string {
			return "it may not be called, since a template can loop any number of times and OPA cannot stop it"
		},
		hint: "build the text with sprintf or concat instead",
	},
	"graph.reachable_paths": {
		check: func([]*ast.Term) string {
			return "it may not be called, since a graph can have exponentially many paths and OPA cannot stop the search"
		},
		hint: "use graph.reachable instead",
	},
}

// CheckOverrides makes Prepare's checks of operator overrides (package
// mcpx.overrides) on modules by file name without compiling the policy:
// for a bundle written for stock OPA servers, which have no deadline of
// their own. The errors name the module and line.
func CheckOverrides(modules map[string]string) error {
	var names []string
	for n, src := range modules {
		if strings.Contains(src, "mcpx.overrides") { // cheap: parse only candidates
			names = append(names, n)
		}
	}
	sort.Strings(names)
	mods, err := parseModules(names, func(n string) string { return modules[n] }, capabilities())
	if err != nil {
		return fmt.Errorf("check overrides: %w", err)
	}
	if errs := guardOverrides(mods); len(errs) > 0 {
		return fmt.Errorf("check overrides: %w", errs)
	}
	return nil
}

// guardOverrides checks every module in package mcpx.overrides: a call to a
// generator must have the shape its entry allows, and a generator may not
// be named other than in a call (a `with` could swap one in). The errors
// name the module and line.
func guardOverrides(mods []*ast.Module) ast.Errors {
	var errs ast.Errors
	for _, m := range mods {
		if m.Package.Path.String() != overridesPackage {
			continue
		}
		errs = append(errs, guardModule(m)...)
	}
	return errs
}

func guardModule(m *ast.Module) ast.Errors {
	var errs ast.Errors
	called := map[*ast.Term]bool{} // operator terms of the calls checked
	report := func(loc *ast.Location, f string, a ...any) {
		errs = append(errs, ast.NewError(ast.CompileErr, loc, f, a...))
	}
	checkCall := func(op *ast.Term, args []*ast.Term, loc *ast.Location) {
		called[op] = true
		name := op.String()
		if strings.HasPrefix(name, engineBuiltinPrefix) {
			if loc == nil {
				loc = op.Location
			}
			report(loc, "%s in an operator override: only the embedded engine has it, so the override would not run on stock OPA or under opa test", name)
			return
		}
		g, ok := generators[name]
		if !ok {
			return
		}
		if loc == nil {
			loc = op.Location
		}
		arity := len(ast.BuiltinMap[name].Decl.FuncArgs().Args)
		if len(args) < arity {
			report(loc, "%s in an operator override takes %d arguments", name, arity)
			return
		}
		if why := g.check(args[:arity]); why != "" {
			report(loc, "%s in an operator override: %s (docs/overrides.md); %s", callText(op, args[:arity]), why, g.hint)
		}
	}
	ast.WalkExprs(m, func(e *ast.Expr) bool {
		if e.IsCall() {
			checkCall(e.OperatorTerm(), e.Operands(), e.Location)
		}
		return false
	})
	ast.WalkTerms(m, func(t *ast.Term) bool {
		switch v := t.Value.(type) {
		case ast.Call:
			checkCall(v[0], v[1:], t.Location)
		case ast.Ref:
			if _, ok := generators[v.String()]; ok && !called[t] {
				report(t.Location, "%s in an operator override may only be called, not named (in a with, for instance)", v)
			}
		}
		return false
	})
	return errs
}

// rangeCheck allows integer literal bounds (and a positive integer literal
// step) that produce at most maxGenerated numbers.
func rangeCheck(from, to, step *ast.Term) string {
	a, ok1 := intLiteral(from)
	b, ok2 := intLiteral(to)
	s := big.NewInt(1)
	ok3 := true
	if step != nil {
		s, ok3 = intLiteral(step)
		ok3 = ok3 && s.Sign() > 0
	}
	if !ok1 || !ok2 || !ok3 {
		what := "its bounds must be integer literals"
		if step != nil {
			what = "its bounds and step must be integer literals, the step positive"
		}
		return what + ", since a bound known only at evaluation could make one call allocate without limit"
	}
	span := new(big.Int).Sub(b, a)
	span.Abs(span).Quo(span, s).Add(span, big.NewInt(1))
	if span.Cmp(big.NewInt(maxGenerated)) > 0 {
		return fmt.Sprintf("it produces %s numbers, more than the %d an override may generate", span, maxGenerated)
	}
	return ""
}

// cidrCheck allows a CIDR literal of at most maxGenerated addresses.
func cidrCheck(args []*ast.Term) string {
	s, ok := args[0].Value.(ast.String)
	if !ok {
		return "its argument must be a CIDR literal, since a network known only at evaluation could make one call allocate without limit"
	}
	_, n, err := net.ParseCIDR(string(s))
	if err != nil {
		return "its argument is not a CIDR"
	}
	ones, bits := n.Mask.Size()
	if bits-ones > 13 { // 2^13 = 8192 ≤ maxGenerated < 2^14
		return fmt.Sprintf("it produces 2^%d addresses, more than the %d an override may generate", bits-ones, maxGenerated)
	}
	return ""
}

// intLiteral is t's value when t is an integer literal of at most 2^53 in
// magnitude.
func intLiteral(t *ast.Term) (*big.Int, bool) {
	n, ok := t.Value.(ast.Number)
	if !ok {
		return nil, false
	}
	// the magnitude first: an exact reading of 1e100000000 would take long
	f, _, err := big.ParseFloat(string(n), 10, 64, big.ToNearestEven)
	if err != nil || f.MantExp(nil) > 54 {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || !r.IsInt() || new(big.Int).Abs(r.Num()).Cmp(new(big.Int).Lsh(big.NewInt(1), 53)) > 0 {
		return nil, false
	}
	return r.Num(), true
}

// callText renders a call for a message, each argument cut short.
func callText(op *ast.Term, args []*ast.Term) string {
	s := op.String() + "("
	for i, a := range args {
		if i > 0 {
			s += ", "
		}
		s += cut(a.String(), 40)
	}
	return s + ")"
}

// cut is s, or its first n characters and an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
