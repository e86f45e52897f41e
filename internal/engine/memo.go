package engine

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/util"
)

// memo keeps, across evaluations of one prepared policy, the values of the
// rules whose value cannot depend on the input: rules that (through every
// rule and function they use) never read input, never call a
// non-deterministic builtin and never use `with`. Such a rule has one value
// for the life of the prepared policy, because the data store is fixed, so
// OPA's per-query virtual cache can be seeded with it: whatever the policy
// derives from the config alone is computed once, not on every call (and
// memoized functions, below, extend this to values keyed by their
// arguments, such as a tool's facts).
//
// A value is learned from a successful evaluation only (an aborted one may
// leave a partial value in OPA's cache) and only at the outermost cache
// frame (a `with` pushes a frame and may replace data).
type memo struct {
	compiler *ast.Compiler
	dataOnly map[*ast.Rule]bool

	mu     sync.RWMutex
	values *util.HasherMap[ast.Ref, memoValue]
	limit  int // memoSize; lowered by tests
}

type memoValue struct {
	term *ast.Term // nil: undefined
}

func refEq(a, b ast.Ref) bool { return a.Equal(b) }

// newMemo is the memo of c's data-only rules and, when functions is true,
// of its functions marked for memoization.
func newMemo(c *ast.Compiler, functions bool) *memo {
	return &memo{
		compiler: c,
		dataOnly: dataOnlyRules(c, functions),
		values:   util.NewHasherMap[ast.Ref, memoValue](refEq),
		limit:    memoSize,
	}
}

// dataOnlyRules marks every rule of c whose value cannot depend on input
// (with functions, also the pure functions marked for memoization).
func dataOnlyRules(c *ast.Compiler, functions bool) map[*ast.Rule]bool {
	var rules []*ast.Rule
	tainted := map[*ast.Rule]bool{}
	for _, m := range c.Modules {
		ast.WalkRules(m, func(r *ast.Rule) bool {
			rules = append(rules, r)
			if !locallyPure(r) {
				tainted[r] = true
			}
			return false
		})
	}
	// propagate: a rule that depends on a tainted rule is tainted
	for changed := true; changed; {
		changed = false
		for _, r := range rules {
			if tainted[r] {
				continue
			}
			for dep := range c.Graph.Dependencies(r) {
				if d, ok := dep.(*ast.Rule); ok && tainted[d] {
					tainted[r] = true
					changed = true
					break
				}
			}
		}
	}
	memoized := map[string]bool{}
	if functions {
		memoized = memoFunctions(c)
	}
	out := make(map[*ast.Rule]bool, len(rules))
	for _, r := range rules {
		if !tainted[r] && (len(r.Head.Args) == 0 || memoized[r.Ref().String()]) {
			out[r] = true
		}
	}
	return out
}

// memoFunctions lists the functions whose METADATA asks for memoization
// (custom: {memo: true}). Such a function's value for given arguments is
// kept like a data-only rule's value, provided it is pure in the same
// sense: it and everything it uses never read input, never use `with` and
// never call a non-deterministic builtin. Its arguments are part of the
// key, so it may be called with values taken from the input (a server and
// tool name, a tool's inputSchema).
func memoFunctions(c *ast.Compiler) map[string]bool {
	out := map[string]bool{}
	for _, m := range c.Modules {
		for _, r := range m.Rules {
			if len(r.Head.Args) == 0 {
				continue
			}
			for _, a := range r.Annotations {
				if v, ok := a.Custom["memo"].(bool); ok && v {
					out[r.Ref().String()] = true
				}
			}
		}
	}
	return out
}

// locallyPureOfBuiltins reports whether r calls no non-deterministic
// builtin.
func locallyPureOfBuiltins(r *ast.Rule) bool {
	return walkPure(r, nondeterministicCall)
}

// locallyPure reports whether r itself (not the rules it uses) reads no
// input, uses no `with` and calls no non-deterministic builtin.
func locallyPure(r *ast.Rule) bool {
	return walkPure(r, func(x any) bool {
		switch x := x.(type) {
		case *ast.Expr:
			if len(x.With) > 0 {
				return true
			}
		case ast.Ref:
			return x.HasPrefix(ast.InputRootRef)
		case ast.Var:
			return x.Equal(ast.InputRootDocument.Value)
		}
		return nondeterministicCall(x)
	})
}

// walkPure reports whether no node of r is impure, stopping at the first
// that is.
func walkPure(r *ast.Rule, impure func(x any) bool) bool {
	pure := true
	ast.NewGenericVisitor(func(x any) bool {
		if pure && impure(x) {
			pure = false
		}
		return !pure
	}).Walk(r)
	return pure
}

// nondeterministicCall reports whether x calls a non-deterministic builtin.
func nondeterministicCall(x any) bool {
	switch x := x.(type) {
	case *ast.Expr:
		return x.IsCall() && nondeterministic(x.Operator())
	case ast.Call:
		if len(x) > 0 {
			if ref, ok := x[0].Value.(ast.Ref); ok {
				return nondeterministic(ref)
			}
		}
	}
	return false
}

func nondeterministic(op ast.Ref) bool {
	b, ok := ast.BuiltinMap[op.String()]
	return ok && b.Nondeterministic
}

// isEligible reports whether the value at ref comes from data-only rules
// alone. A function call's ref (the function's ref and its arguments) is
// eligible only for a pure function marked for memoization.
func (m *memo) isEligible(ref ast.Ref) bool {
	// OPA keys a function call's value by [function ref, args...]
	if fn, ok := ref[0].Value.(ast.Ref); ok {
		ref = fn
	}
	rules := m.compiler.GetRulesForVirtualDocument(ref)
	if len(rules) == 0 {
		return false
	}
	for _, r := range rules {
		if !m.dataOnly[r] {
			return false
		}
	}
	return true
}

func (m *memo) get(ref ast.Ref) (memoValue, bool) {
	m.mu.RLock()
	v, ok := m.values.Get(ref)
	m.mu.RUnlock()
	return v, ok
}

// memoKeyBytes bounds the arguments a memoized function's value is kept
// for (roughly their JSON size): values computed for larger arguments are
// not kept, so the memo's memory stays within memoSize small entries.
const memoKeyBytes = 4096

// small reports whether the terms of ref add up to at most budget bytes of
// strings, numbers and structure, stopping as soon as they do not.
func small(ref ast.Ref, budget int) bool {
	var walk func(v ast.Value) bool
	walk = func(v ast.Value) bool {
		switch x := v.(type) {
		case ast.String:
			budget -= len(x) + 2
		case ast.Number:
			budget -= len(x)
		case ast.Ref:
			for _, t := range x {
				if !walk(t.Value) {
					return false
				}
			}
		case *ast.Array:
			if x.Until(func(e *ast.Term) bool { return !walk(e.Value) }) {
				return false
			}
		case ast.Object:
			if x.Until(func(k, e *ast.Term) bool { return !walk(k.Value) || !walk(e.Value) }) {
				return false
			}
		case ast.Set:
			if x.Until(func(e *ast.Term) bool { return !walk(e.Value) }) {
				return false
			}
		}
		budget--
		return budget >= 0
	}
	for _, t := range ref {
		if !walk(t.Value) {
			return false
		}
	}
	return true
}

// memoSize caps the values one prepared policy keeps: a memoized
// function's arguments come from calls, so its values are bounded here
// (about one entry per tool and one per distinct inputSchema in practice).
// Past the cap nothing more is learned; evaluation stays correct, only
// slower for what was not learned.
const memoSize = 1 << 16

func (m *memo) commit(learned []memoEntry) {
	if len(learned) == 0 {
		return
	}
	m.mu.Lock()
	for _, e := range learned {
		if m.values.Len() >= m.limit {
			break
		}
		if _, ok := m.values.Get(e.ref); !ok {
			m.values.Put(e.ref, memoValue{e.term})
		}
	}
	m.mu.Unlock()
}

type memoEntry struct {
	ref  ast.Ref
	term *ast.Term
}

// memoCache is the VirtualCache of one evaluation: OPA's own cache, read
// through to the memo at the outermost frame.
type memoCache struct {
	inner   topdown.VirtualCache
	memo    *memo
	depth   int
	learned []memoEntry
	// once: the query reads each rule and function value once at the
	// outermost frame (the decision's common half), so keeping them in
	// OPA's cache there is work for nothing; the memo still learns them
	once bool
}

func (m *memo) cache() *memoCache {
	return &memoCache{inner: topdown.NewVirtualCache(), memo: m}
}

func (c *memoCache) Push() { c.depth++; c.inner.Push() }

func (c *memoCache) Pop() { c.depth--; c.inner.Pop() }

func (c *memoCache) Get(ref ast.Ref) (*ast.Term, bool) {
	if c.depth == 0 {
		if v, ok := c.memo.get(ref); ok {
			return v.term, v.term == nil
		}
	}
	return c.inner.Get(ref)
}

func (c *memoCache) Put(ref ast.Ref, value *ast.Term) {
	if !c.once || c.depth > 0 {
		c.inner.Put(ref, value)
	}
	if c.depth == 0 && ref.IsGround() && c.memo.isEligible(ref) && small(ref, memoKeyBytes) {
		c.learned = append(c.learned, memoEntry{ref.Copy(), value})
	}
}

func (c *memoCache) Keys() []ast.Ref { return c.inner.Keys() }
