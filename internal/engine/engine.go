// Package engine is the one adapter that evaluates the policy with OPA. It
// prepares the query data.mcpx.decision once per policy revision and turns
// each call into a decision.Decision. No exported name takes, returns or
// holds an OPA type (TestFaceNamesNoOPAType); the measurement and
// equivalence hooks that do (Input, Evaluate, EvaluateInput, Results,
// WithoutFunctionMemo) exist only in the package's tests, export_test.go,
// for the benchmarks and equivalence tests beside it
// (docs/decisions/0001-rego-layout.md).
package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown/cache"

	"github.com/mcpx/mcpx-policy/decision"
	policyrego "github.com/mcpx/mcpx-policy/rego"
)

// decisionQuery is the policy's entrypoint.
const decisionQuery = "data.mcpx.decision"

// Policy is everything the engine evaluates: Rego modules by file name and
// the data document that goes under data.mcpx (normally {"config": …}).
type Policy struct {
	Modules  map[string]string
	Data     map[string]any
	Revision string
	// Schemas maps generated rule packages to their argument-rule schemas
	// (config.Compiled.Schemas), for the Go form of the rules predicate
	// (predicates.go). Optional: without a package's schema the Rego path
	// checks its rule.
	Schemas map[string]any
}

// Prepared is a prepared policy. It is safe for concurrent use: its caches
// (the input-independent rule memo, OPA's inter-query builtin value cache
// for compiled regexes, and the decision cache) are internally locked and
// never change a decision.
type Prepared struct {
	query rego.PreparedEvalQuery
	// common and uncommon are the decision's two halves (data.mcpx.
	// common_document, which is common_decision less its call, and
	// uncommon_decision), prepared when the engine answers the predicates
	// and no operator override could read the arguments: the common half
	// is asked first on an input without the arguments, which are
	// converted only when it is undefined (lite).
	common, uncommon *rego.PreparedEvalQuery
	// planning: the common half is data.mcpx.common_or_planned, whose
	// answer may also be a planned call, whose refusal details are built
	// in Go (refusals, refusal.go)
	planning bool
	refusals *refusals
	// hidden are the plans of hidden tools met (hidden.go), nil without
	// the common half
	hidden *hiddenPlans
	// plans are the planned answers met (planned.go), nil without planning
	plans    *plannedAnswers
	revision string
	memo     *memo
	schemas  *schemaCache
	builtins cache.InterQueryValueCache
	// decisions is nil when the policy calls a non-deterministic builtin
	// (time.now_ns, rand.intn, …): then equal inputs may decide differently.
	decisions *decisionCache
}

// forbidden are builtins the policy may never call: no network, no runtime
// introspection. Stock OPA runs the same policy, so the restriction is a
// guard against operator overrides reaching out, not a semantic change.
var forbidden = map[string]bool{
	"http.send":          true,
	"net.lookup_ip_addr": true,
	"opa.runtime":        true,
	"rego.parse_module":  true,
}

// capabilities is this OPA's capabilities less the forbidden builtins.
func capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	kept := caps.Builtins[:0:0]
	for _, b := range caps.Builtins {
		if !forbidden[b.Name] {
			kept = append(kept, b)
		}
	}
	caps.Builtins = kept
	caps.AllowNet = []string{}
	return caps
}

// The engine compiles the policy's compile guard (rego.CompileGuardFile,
// rego/mcpx/lib/compile_guard.rego) with every policy, also one that does
// not ship it: OPA v1.22's type checker asks, for every rule, which rules a
// `with` replaces; when no module has a `with` on a rule the answer is an
// empty (nil) set, which it does not keep, so it walks every module again
// for every rule and compile time grows with the square of the config.

// Option configures Prepare.
type Option func(*settings)

type settings struct {
	query         string
	memoFunctions bool
}

// WithQuery prepares another query than data.mcpx.decision (for example
// data.mcpx.lib.tool.facts for a rollout report, or
// data.mcpx.steps.rules.deny to measure one part of the policy). Decide on
// such a Prepared fails closed (the result is not a decision); Value
// answers it.
func WithQuery(query string) Option { return func(s *settings) { s.query = query } }

// Prepare compiles p and prepares the decision query (or the one WithQuery
// names). A module that does not parse or compile is an error naming the
// file and line. An equal small policy prepared before, whose Prepared is
// still in use or was the last one, is answered with that Prepared
// (reuse.go).
func Prepare(ctx context.Context, p Policy, opts ...Option) (*Prepared, error) {
	s := settings{query: decisionQuery, memoFunctions: true}
	for _, o := range opts {
		o(&s)
	}
	return prepareReusing(ctx, p, s)
}

func prepare(ctx context.Context, p Policy, s settings) (*Prepared, error) {
	query := s.query
	names := make([]string, 0, len(p.Modules))
	for n := range p.Modules {
		names = append(names, n)
	}
	sort.Strings(names)
	caps := capabilities()
	preds := newPredicates(p.Schemas, p.Data["secrets"])
	compiler := ast.NewCompiler().
		WithCapabilities(caps).
		WithBuiltins(predicateDeclarations()).
		WithUseTypeCheckAnnotations(true).
		WithDefaultRegoVersion(ast.RegoV1)
	opts := []func(*rego.Rego){
		rego.Compiler(compiler),
		rego.Query(query),
		rego.StrictBuiltinErrors(true),
		rego.Capabilities(caps),
		rego.SetRegoVersion(ast.RegoV1),
	}
	opts = append(opts, preds.options()...)
	// (the store, which keeps data as ast.Values so a read is a lookup,
	// not a conversion of the config on every call, is added below)
	_, swap := p.Modules[predicatesFile]
	names = slices.DeleteFunc(names, func(n string) bool { return n == predicatesFile })
	if _, ok := p.Modules[policyrego.CompileGuardFile]; !ok {
		names = append(names, policyrego.CompileGuardFile)
	}
	mods, err := parseModules(names, func(n string) string {
		if src, ok := p.Modules[n]; ok {
			return src
		}
		return policyrego.CompileGuard()
	}, caps)
	if err != nil {
		return nil, fmt.Errorf("prepare policy: %w", err)
	}
	overrides := hasOverrides(mods, p.Data)
	if swap {
		// the engine's form of the predicates (predicates.go)
		pm, err := parseModules([]string{predicatesFile}, func(string) string { return predicatesModule(overrides) }, caps)
		if err != nil {
			return nil, fmt.Errorf("prepare policy: %w", err)
		}
		mods = append(mods, pm...)
	}
	if errs := guardOverrides(mods); len(errs) > 0 {
		return nil, fmt.Errorf("prepare policy: %w", errs)
	}
	store := inmem.NewFromObjectWithOpts(map[string]any{"mcpx": p.Data}, inmem.OptReturnASTValuesOnRead(true))
	opts = append(opts, rego.Store(store))
	base := slices.Clone(opts)
	for _, m := range mods {
		opts = append(opts, rego.ParsedModule(m))
	}
	if _, err := rego.New(opts...).PrepareForEval(ctx); err != nil {
		return nil, fmt.Errorf("prepare policy: %w", err)
	}
	releaseParsed(compiler)
	// the query is prepared again on the compiled policy, like the halves
	// below: a prepared query keeps the parsed modules it was given
	pq, err := rego.New(base...).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("prepare policy: %w", err)
	}
	// the decision's halves, on the compiled policy
	var halves [2]*rego.PreparedEvalQuery
	planning := hasRule(compiler, plannedQuery)
	if query == decisionQuery && swap && !overrides && hasRule(compiler, commonQuery) && hasRule(compiler, uncommonQuery) {
		first := commonQuery
		if planning {
			first = plannedQuery
		}
		for i, q := range []string{first, uncommonQuery} {
			hq, err := rego.New(append(slices.Clone(base), rego.Query(q))...).PrepareForEval(ctx)
			if err != nil {
				return nil, fmt.Errorf("prepare policy: %w", err)
			}
			halves[i] = &hq
		}
	}
	preds.keep(compiler)
	entries := 4096
	e := &Prepared{
		query:    pq,
		common:   halves[0],
		uncommon: halves[1],
		planning: planning && halves[0] != nil,
		refusals: newRefusals(preds, p.Data),
		revision: p.Revision,
		memo:     newMemo(compiler, s.memoFunctions),
		schemas:  newSchemaCache(),
		builtins: cache.NewInterQueryValueCache(ctx, &cache.Config{InterQueryBuiltinValueCache: cache.InterQueryBuiltinValueCacheConfig{MaxNumEntries: &entries}}),
	}
	if e.common != nil {
		e.hidden = newHiddenPlans()
	}
	if e.planning {
		e.plans = newPlannedAnswers()
	}
	if !callsNondeterministic(compiler) {
		e.decisions = newDecisionCache(decisionCacheSize)
	}
	return e, nil
}

// releaseParsed lets the parsed modules go once c has compiled its own
// copies: OPA's Module.Copy points the copy of each top-level rule at the
// new module but leaves every else rule's Module at the parsed one, so one
// else kept its whole parsed module (every rule, expression and term) for
// the life of the engine. The copies' modules have the same package and
// text; evaluation reads no more of a rule's Module than that.
func releaseParsed(c *ast.Compiler) {
	for _, m := range c.Modules {
		for _, r := range m.Rules {
			for e := r.Else; e != nil; e = e.Else {
				e.Module = r.Module
			}
		}
	}
}

// parseModules parses the named modules on every core (a large config has
// thousands of generated modules); the errors name file and line, in name
// order.
func parseModules(names []string, source func(string) string, caps *ast.Capabilities) ([]*ast.Module, error) {
	mods := make([]*ast.Module, len(names))
	errs := make([]error, len(names))
	// annotations are kept: custom.memo marks the functions the memo may keep
	opts := ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: caps, ProcessAnnotation: true}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(names); i = int(next.Add(1)) - 1 {
				mods[i], errs[i] = ast.ParseModuleWithOpts(names[i], source(names[i]), opts)
			}
		}()
	}
	wg.Wait()
	var all ast.Errors
	for _, err := range errs {
		var aerrs ast.Errors
		switch {
		case err == nil:
		case errors.As(err, &aerrs):
			all = append(all, aerrs...)
		default:
			return nil, err
		}
	}
	if len(all) > 0 {
		return nil, all
	}
	return mods, nil
}

// callsNondeterministic reports whether any module calls a builtin whose
// result may differ between two evaluations of the same input.
func callsNondeterministic(c *ast.Compiler) bool {
	for _, m := range c.Modules {
		for _, r := range m.Rules {
			if !locallyPureOfBuiltins(r) {
				return true
			}
		}
	}
	return false
}

// The decision's halves (rego/mcpx/decision.rego).
const (
	commonQuery   = "data.mcpx.common_document"
	uncommonQuery = "data.mcpx.uncommon_decision"
	// plannedQuery is the common half with a planned call's answer
	// (common_or_planned); a policy without it is asked commonQuery
	plannedQuery = "data.mcpx.common_or_planned"
)

// hasRule reports whether c holds a rule at query's ref.
func hasRule(c *ast.Compiler, query string) bool {
	return len(c.GetRulesExact(ast.MustParseRef(query))) > 0
}

// Revision is the policy revision the engine was prepared from.
func (e *Prepared) Revision() string { return e.revision }

// Ledger is what the caller read from its state for the call: of the
// server's unknown-outcome entries the oldest and the total count (Entries
// may hold fewer than Total: a deny lists a bounded number), or, when it
// could not read them, Unreadable saying why in words fit for an agent (no
// file paths, no parser text); and, when the server pins tool definitions,
// the tool's pin status.
type Ledger struct {
	Entries    []decision.LedgerEntry
	Total      int // all of the server's entries; below len(Entries) counts as len(Entries)
	Unreadable string
	// Seen is the token of all of the server's entries (ledger.Seen): not
	// part of the input, it lets the answer spell a clear command that
	// clears exactly what the decision was shown.
	Seen string
	// Pin is input.tool.pin; nil leaves it out (pinning off).
	Pin *Pin
	// Budgets are the counts of the write budgets that count the call
	// (input.ledger.budgets, rego/mcpx/steps/budget.rego); none leaves
	// them out.
	Budgets []BudgetCount
	// Labels are the labels the call's session has touched, for the
	// data-flow rules (input.ledger.labels, rego/mcpx/steps/flow.rego);
	// nil leaves them out (no rule judges the call), an empty non-nil
	// slice gives none.
	Labels []string
	// LabelsError is why the gateway cannot remember the call's labels
	// for its session (input.ledger.labels_error); "" leaves it out.
	LabelsError string
}

// BudgetCount is one write budget's count as the policy reads it: the
// writes dispatched in its window for the call's scope, and when the
// oldest of them leaves the window (RFC 3339, UTC; "" when the count is
// 0).
type BudgetCount struct {
	ID      string
	Count   int
	RetryAt string
}

// Pin is the call's tool compared with its pinned definition, as the
// policy reads it in input.tool.pin (docs/fleet.md).
type Pin struct {
	// Status is ok, new, changed or error.
	Status string
	// SHA256 is the hex SHA-256 of the tool's canonical definition
	// (decision.ToolSHA256); PinnedSHA256 the pinned one's ("" when new).
	SHA256, PinnedSHA256 string
	// Changed lists the fields that differ (changed only).
	Changed []string
	// Error says, for an agent, why the pin could not be checked (error
	// only).
	Error string
}

// Decide evaluates the policy for call. It always returns a decision; when
// evaluation fails the decision is a PolicyError deny and the error is
// returned as well (fail closed).
func (e *Prepared) Decide(ctx context.Context, call decision.Call, led *Ledger) (decision.Decision, error) {
	var pin *Pin
	if led != nil {
		pin = led.Pin
	}
	if d, ok := e.DecideHidden(ctx, call, pin); ok {
		return d, nil
	}
	schema := e.schemas.tool(call.Tool.InputSchema)
	digest := digestCall(call)
	var key cacheKey
	cacheable := false
	if e.decisions != nil && ctx.Err() == nil {
		key, cacheable = makeKey(e.revision, call, schema, led, digest)
	}
	sum, err := digest.sha256(call)
	digest.release()
	if cacheable {
		if d, ok := e.decisions.get(key); ok {
			return d, nil
		}
	}
	ref := decision.CallRef{Server: call.Server, Tool: call.Tool.Name}
	if err != nil {
		// A number beyond a double's range has no canonical form. The
		// policy names it with its argument path, as on a stock OPA: ask
		// it, without the hash, before falling back to the error's words.
		if d, ok := e.explainInvalid(ctx, call, led, schema); ok {
			return d, err
		}
		return decision.Denied(ref, decision.InvalidInput, "invalid call: arguments are not JSON: "+err.Error()), err
	}
	ref.SHA256 = sum
	d, learned, err := e.evaluate(ctx, call, led, sum, schema, ref)
	if err != nil {
		return d, err
	}
	e.memo.commit(learned)
	if d.Step == decision.StepHidden && d.Outcome == decision.Deny {
		e.learnHidden(call)
	}
	d.Call.SHA256 = sum
	if cacheable {
		e.decisions.put(key, d)
	}
	return d, nil
}

// explainInvalid evaluates a call whose arguments have no canonical form
// and returns the policy's decision when it is an InvalidInput deny.
func (e *Prepared) explainInvalid(ctx context.Context, call decision.Call, led *Ledger, schema toolSchema) (decision.Decision, bool) {
	ref := decision.CallRef{Server: call.Server, Tool: call.Tool.Name}
	d, _, err := e.evaluate(ctx, call, led, "", schema, ref)
	if err != nil || d.Outcome != decision.Deny || d.First().Code != decision.InvalidInput {
		return decision.Decision{}, false
	}
	return d, true
}

// evaluate runs the prepared query on the call's input (with call_sha256
// sum, none when ""). It always returns a decision, a PolicyError or
// InvalidInput deny for ref when it also returns an error; learned is what
// the memo may keep.
func (e *Prepared) evaluate(ctx context.Context, call decision.Call, led *Ledger, sum string, schema toolSchema, ref decision.CallRef) (decision.Decision, []memoEntry, error) {
	limit := budget(ctx)
	if err := ctx.Err(); err != nil {
		return decision.Denied(ref, decision.PolicyError, stoppedMessage(err, limit)), nil, fmt.Errorf("evaluate policy: %w", err)
	}
	in, err := inputWithoutArgs(call, led, sum, schema, e.schemas)
	if err != nil {
		return decision.Denied(ref, decision.InvalidInput, "invalid call: "+err.Error()), nil, err
	}
	ga := &callArgs{goArgs: call.Args, verdicts: verdicts{}}
	if d, ok := e.decideKept(call, led, in, ga); ok {
		if seen, ok := ctx.Value(builtKey{}).(*bool); ok {
			*seen = true
		}
		if n, ok := ctx.Value(unevaluatedKey{}).(*int); ok {
			*n++
		}
		d.Call = decision.CallRef{Server: call.Server, Tool: call.Tool.Name, SHA256: sum}
		return d, nil, nil
	}
	ctx = context.WithValue(ctx, callArgsKey{}, ga)
	var learned []memoEntry
	var t *ast.Term
	if e.common != nil {
		// the common case first, without the arguments
		ga.lite = true
		t, learned, err = e.eval(ctx, e.common, in)
		if err != nil {
			ga.lite = false
			return evalFailed(ctx, ref, limit, err)
		}
		if t != nil && e.planning {
			// common_or_planned: the common document, or a planned call
			// whose findings the engine builds in Go when it can
			var d decision.Decision
			var built bool
			if t, d, built = e.firstAnswer(call, led, in, ga, t); built {
				ga.lite = false
				if seen, ok := ctx.Value(builtKey{}).(*bool); ok {
					*seen = true
				}
				d.Call = decision.CallRef{Server: call.Server, Tool: call.Tool.Name, SHA256: sum}
				return d, learned, nil
			}
		}
		ga.lite = false
		if t != nil {
			// common_decision is this document and the call (decision.rego)
			d, err := fromTerm(t.Value)
			if err != nil {
				return decision.Denied(ref, decision.PolicyError, "policy error: malformed decision; denied (fail closed)"), nil, err
			}
			e.learnCommon(call, led, ga, d)
			d.Call = decision.CallRef{Server: call.Server, Tool: call.Tool.Name, SHA256: sum}
			return d, learned, nil
		}
	}
	if t == nil {
		args, err := value(call.Args)
		if err != nil {
			return decision.Denied(ref, decision.InvalidInput, "invalid call: args: "+err.Error()), nil, fmt.Errorf("args: %w", err)
		}
		in.Insert(kArgs, ast.NewTerm(args))
		ga.ast = args
		pq := &e.query
		if e.uncommon != nil {
			pq = e.uncommon
		}
		var more []memoEntry
		t, more, err = e.eval(ctx, pq, in)
		if err == nil && t == nil && pq != &e.query {
			// neither half decided: the decision's default
			t, more, err = e.eval(ctx, &e.query, in)
		}
		if err != nil {
			return evalFailed(ctx, ref, limit, err)
		}
		learned = append(learned, more...)
	}
	if t == nil {
		return decision.Denied(ref, decision.PolicyError, "policy error: the policy produced no decision; denied (fail closed)"), nil, errors.New("evaluate policy: undefined decision")
	}
	d, err := fromTerm(t.Value)
	if err != nil {
		return decision.Denied(ref, decision.PolicyError, "policy error: malformed decision; denied (fail closed)"), nil, err
	}
	return d, learned, nil
}

// builtKey notes on a context a *bool that evaluate sets when it built
// the decision in Go (the equivalence tests' hook, export_test.go).
type builtKey struct{}

// firstAnswer reads common_or_planned's answer t: the common document
// (t itself: it has no "planned" key), or for a planned call the decision
// built in Go (built), or neither (the Rego's uncommon half decides).
func (e *Prepared) firstAnswer(call decision.Call, led *Ledger, in ast.Object, ga *callArgs, t *ast.Term) (*ast.Term, decision.Decision, bool) {
	obj, ok := t.Value.(ast.Object)
	if !ok {
		return nil, decision.Decision{}, false
	}
	if obj.Get(kPlanned) == nil {
		return t, decision.Decision{}, false
	}
	pl, ok := plannedOf(obj)
	if !ok {
		return nil, decision.Decision{}, false
	}
	e.plans.planned.learn(plannedKeyOf(call, led), pl)
	d, ok := e.refusals.buildPlanned(call, in, ga, pl)
	return nil, d, ok
}

// eval evaluates pq on input in: the result's term, nil when undefined,
// and what the memo may learn from the evaluation.
func (e *Prepared) eval(ctx context.Context, pq *rego.PreparedEvalQuery, in ast.Value) (*ast.Term, []memoEntry, error) {
	vc := e.memo.cache()
	vc.once = pq == e.common
	rs, err := pq.Eval(ctx,
		rego.EvalParsedInput(in),
		rego.EvalVirtualCache(vc),
		rego.EvalInterQueryBuiltinValueCache(e.builtins),
		keepTerm,
		rego.EvalMetrics(noMetrics),
		// OPA would start a goroutine per evaluation to watch ctx
		rego.EvalExternalCancel(ctxCancel{ctx}),
	)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case len(rs) == 0:
		return nil, vc.learned, nil
	case len(rs) != 1 || len(rs[0].Expressions) != 1:
		return nil, nil, fmt.Errorf("evaluate policy: %d results", len(rs))
	}
	t, ok := rs[0].Expressions[0].Value.(*ast.Term)
	if !ok {
		return nil, nil, fmt.Errorf("decision: unexpected result %T", rs[0].Expressions[0].Value)
	}
	return t, vc.learned, nil
}

// evalFailed is the decision of an evaluation that failed with err.
func evalFailed(ctx context.Context, ref decision.CallRef, limit time.Duration, err error) (decision.Decision, []memoEntry, error) {
	if cerr := ctx.Err(); cerr != nil {
		// OPA stopped at a cancellation point: between two expressions,
		// or inside a builtin that checks (numbers.range, concat, …)
		return decision.Denied(ref, decision.PolicyError, stoppedMessage(cerr, limit)), nil, fmt.Errorf("evaluate policy: %w: %w", cerr, err)
	}
	return decision.Denied(ref, decision.PolicyError, "policy error: evaluation failed; denied (fail closed)"), nil, fmt.Errorf("evaluate policy: %w", err)
}

var (
	// keepTerm keeps the result as an ast.Value: fromTerm reads it directly
	keepTerm = rego.EvalGenerateJSON(func(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil })
	// noMetrics: nothing reads an evaluation's metrics
	noMetrics = metrics.NoOp()
)

// ctxCancel stops an evaluation once its context is done: OPA asks
// Cancelled between expressions and inside the builtins that loop.
type ctxCancel struct{ ctx context.Context }

func (ctxCancel) Cancel() {}

func (c ctxCancel) Cancelled() bool {
	// Err, not Done: a context makes its Done channel on first ask
	return c.ctx.Err() != nil
}

type budgetKey struct{}

// WithBudget notes on ctx the time limit of the decision, for the message
// of a decision the deadline stops: a caller that set the deadline itself
// passes the limit it set ("5s"), not what is left of it by the time the
// decision starts.
func WithBudget(ctx context.Context, limit time.Duration) context.Context {
	return context.WithValue(ctx, budgetKey{}, limit.Round(time.Millisecond))
}

// budget is the time ctx leaves for the decision (as noted by WithBudget,
// else now), rounded for a message; 0 when ctx has no deadline.
func budget(ctx context.Context) time.Duration {
	if b, ok := ctx.Value(budgetKey{}).(time.Duration); ok {
		return b
	}
	dl, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	return max(time.Until(dl), 0).Round(time.Millisecond)
}

// stoppedMessage is the PolicyError message of a decision stopped by its
// context: cause is ctx.Err(), limit the time it had (0 when unknown).
func stoppedMessage(cause error, limit time.Duration) string {
	if !errors.Is(cause, context.DeadlineExceeded) {
		return "policy error: the decision was cancelled before it was made; denied (fail closed)"
	}
	if limit > 0 {
		return fmt.Sprintf("policy error: the decision did not finish within its time limit (%s) and was stopped; denied (fail closed)", limit)
	}
	return "policy error: the decision's deadline had passed before it was made; denied (fail closed)"
}
