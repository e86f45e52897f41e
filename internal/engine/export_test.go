package engine

// The package's measurement and equivalence hooks. They take or return OPA
// values, so they are no part of the package's face (TestFaceNamesNoOPAType):
// they exist only for the tests and benchmarks in this directory (package
// engine_test: predicates_equiv_test.go, bench_test.go).

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// Input is the policy input Decide evaluates for call, as an ast.Value
// (callInput).
func Input(call decision.Call, led *Ledger) (ast.Value, error) { return callInput(call, led) }

// WithoutFunctionMemo prepares an engine that does not keep the values of
// the functions marked for memoization (custom memo, ADR 0005): every call
// pays what the first call on a tool pays. For measurements.
func WithoutFunctionMemo() Option { return func(s *settings) { s.memoFunctions = false } }

// Evaluate evaluates the prepared query for call the way Decide does (same
// input, same caches except the decision cache) and returns the number of
// results; for measurements.
func (e *Prepared) Evaluate(ctx context.Context, call decision.Call, led *Ledger) (int, error) {
	sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if err != nil {
		sum = ""
	}
	in, err := input(call, led, sum, newToolSchema(call.Tool.InputSchema), e.schemas)
	if err != nil {
		return 0, err
	}
	if args := in.(ast.Object).Get(kArgs); args != nil {
		ctx = withCallArgs(ctx, args.Value, call.Args)
	}
	return e.EvaluateInput(ctx, in)
}

// Results evaluates the prepared query for call as Evaluate does and
// returns the value of each result as decoded JSON (numbers as
// json.Number); with a nil call it evaluates input in (built with Input,
// or any JSON converted to AST) instead. For tests that compare a part of
// the policy between the engine and stock OPA.
func (e *Prepared) Results(ctx context.Context, in ast.Value, call *decision.Call, led *Ledger) ([]any, error) {
	if call != nil {
		sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
		if err != nil {
			sum = ""
		}
		if in, err = input(*call, led, sum, newToolSchema(call.Tool.InputSchema), e.schemas); err != nil {
			return nil, err
		}
		if args := in.(ast.Object).Get(kArgs); args != nil {
			ctx = withCallArgs(ctx, args.Value, call.Args)
		}
	}
	vc := e.memo.cache()
	rs, err := e.query.Eval(ctx, rego.EvalParsedInput(in), rego.EvalVirtualCache(vc), rego.EvalInterQueryBuiltinValueCache(e.builtins), keepTerm)
	if err != nil {
		return nil, err
	}
	e.memo.commit(vc.learned)
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		if len(r.Expressions) != 1 {
			return nil, fmt.Errorf("results: %d expressions", len(r.Expressions))
		}
		t, ok := r.Expressions[0].Value.(*ast.Term)
		if !ok {
			return nil, fmt.Errorf("results: unexpected %T", r.Expressions[0].Value)
		}
		v, err := ast.JSONWithOpt(t.Value, ast.JSONOpt{SortSets: true})
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// EvaluateInput is Evaluate on an input already built with Input; opts
// are added to the evaluation's own (a profiler's tracer, for instance).
func (e *Prepared) EvaluateInput(ctx context.Context, in ast.Value, opts ...rego.EvalOption) (int, error) {
	vc := e.memo.cache()
	opts = append([]rego.EvalOption{rego.EvalParsedInput(in), rego.EvalVirtualCache(vc), rego.EvalInterQueryBuiltinValueCache(e.builtins)}, opts...)
	rs, err := e.query.Eval(ctx, opts...)
	if err != nil {
		return 0, err
	}
	e.memo.commit(vc.learned)
	return len(rs), nil
}

// DecideBuilt is Decide, reporting whether the decision was built in Go
// (a planned call's refusal details, refusal.go) rather than by the Rego:
// a decision the decision cache answers reports false.
func (e *Prepared) DecideBuilt(ctx context.Context, call decision.Call, led *Ledger) (decision.Decision, bool, error) {
	var built bool
	d, err := e.Decide(context.WithValue(ctx, builtKey{}, &built), call, led)
	return d, built, err
}

// DecideCounted is DecideBuilt, reporting also whether the decision was
// made from a planned answer met before, without an evaluation
// (planned.go).
func (e *Prepared) DecideCounted(ctx context.Context, call decision.Call, led *Ledger) (d decision.Decision, built, unevaluated bool, err error) {
	n := 0
	d, built, err = e.DecideBuilt(context.WithValue(ctx, unevaluatedKey{}, &n), call, led)
	return d, built, n > 0, err
}

// ExplainWith makes e compute a value's violations with f instead of the
// package's Explainer: a test's way to make the Go violations differ
// from santhosh's verdict (refusal_rules.go) and see the Rego decide.
func (e *Prepared) ExplainWith(f func(x *schemarego.Explainer, v ast.Value, pointer string) []schemarego.Violation) {
	e.refusals.violations = f
	e.refusals.memo.mu.Lock()
	e.refusals.memo.m = nil // findings kept before are the Explainer's
	e.refusals.memo.mu.Unlock()
}

// WellFormedCall reports, for call with the ledger led, what the hidden
// tools' fast path asks (wellFormedCall) and what the evaluation's
// predicate answers on the input it would read (wellFormed on
// inputWithoutArgs; false when that input cannot be built): the first
// must imply the second.
func (e *Prepared) WellFormedCall(call decision.Call, led *Ledger) (fast, slow bool) {
	sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if err != nil {
		sum = ""
	}
	fast = wellFormedCall(call)
	in, err := inputWithoutArgs(call, led, sum, e.schemas.tool(call.Tool.InputSchema), e.schemas)
	if err != nil {
		return fast, false
	}
	return fast, wellFormed(&callArgs{goArgs: call.Args, lite: true, verdicts: verdicts{}}, in)
}

// Nearest is the Go form of text.nearest(key, candidates), candidates
// sorted as the unknown-arguments step sorts them.
func Nearest(key string, candidates []string) string {
	shapes := make([]shape, len(candidates))
	for i, c := range candidates {
		shapes[i] = shapeOf(c)
	}
	return nearest(key, candidates, shapes)
}
