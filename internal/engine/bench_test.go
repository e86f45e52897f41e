package engine_test

// The engine's benchmarks on the reference workloads (internal/bench,
// docs/performance.md): those that measure through the hooks only this
// directory's tests see (export_test.go). `make bench` runs
// BenchmarkDecideNewTools, BenchmarkMatchSchema and BenchmarkRulesOnly with
// internal/bench's benchmarks and prints them in one table.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/profiler"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/bench"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// fixture is a reference workload with what the benchmarks share,
// prepared once per process: its config on disk, the json.match_schema
// policy, the engine without memo and the argument-rules step alone.
type fixture struct {
	w     *bench.Workload
	dir   string
	paths []string // the workload's config
	ms    *bench.MatchSchema
	cold  *engine.Prepared // an engine without the per-tool memo (WithoutFunctionMemo)
	rules *engine.Prepared // the argument-rules step alone
}

var (
	fixMu    sync.Mutex
	fixtures = map[string]*fixture{}
)

func load(b testing.TB, s bench.Shape) *fixture {
	b.Helper()
	fixMu.Lock()
	defer fixMu.Unlock()
	if f := fixtures[s.Name]; f != nil {
		return f
	}
	f := &fixture{w: bench.Generate(s)}
	dir, err := os.MkdirTemp("", "mcpx-engine-bench-"+s.Name)
	if err != nil {
		b.Fatal(err)
	}
	f.dir = dir
	fixtures[s.Name] = f // removed by TestMain
	opts, err := f.w.Options(dir)
	if err != nil {
		b.Fatal(err)
	}
	f.paths = opts.ConfigPaths
	if f.ms, err = bench.NewMatchSchema(context.Background(), f.w); err != nil {
		b.Fatal(err)
	}
	return f
}

// policy compiles the fixture's config as the SDK does (afresh on every
// call: each engine gets its own).
func (f *fixture) policy(b *testing.B) engine.Policy {
	return policyOf(b, f.paths...)
}

func TestMain(m *testing.M) {
	sweep.LessGC()
	code := m.Run()
	for _, f := range fixtures {
		os.RemoveAll(f.dir)
	}
	for _, wl := range workloads {
		os.RemoveAll(wl.dir)
	}
	os.Exit(code)
}

// BenchmarkDecideNewTools is internal/bench's BenchmarkDecide on an engine
// that memoizes no function (WithoutFunctionMemo): every call pays what the
// first call on a tool pays. It asks the engine directly, with an empty ledger,
// as the SDK's Decide does for a call with nothing in the ledger.
func BenchmarkDecideNewTools(b *testing.B) {
	for _, s := range []bench.Shape{bench.M, bench.L} {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			fixMu.Lock()
			if f.cold == nil {
				eng, err := engine.Prepare(context.Background(), f.policy(b), engine.WithoutFunctionMemo())
				if err != nil {
					fixMu.Unlock()
					b.Fatal(err)
				}
				f.cold = eng
			}
			fixMu.Unlock()
			calls := f.w.Fresh(b.N)
			ctx := context.Background()
			bench.Timed(b, func(i int) {
				if _, err := f.cold.Decide(ctx, calls[i], &engine.Ledger{}); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkMatchSchema is the config as a Rego user would write it with
// json.match_schema, on the same input document (input building included).
func BenchmarkMatchSchema(b *testing.B) {
	for _, s := range []bench.Shape{bench.M, bench.L} {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			calls := f.w.Fresh(b.N)
			ctx := context.Background()
			bench.Timed(b, func(i int) {
				in, err := engine.Input(calls[i], &engine.Ledger{})
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := f.ms.Decide(ctx, in); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkRulesOnly compares the argument-rule checking alone: the
// engine's argument-rules step (matching, targets, the generated packages,
// violations with messages: data.mcpx.steps.rules.deny) against the
// json.match_schema policy's violations (scan, match, json.match_schema).
func BenchmarkRulesOnly(b *testing.B) {
	for _, s := range []bench.Shape{bench.M, bench.L} {
		for _, kind := range []string{"generated", "match_schema"} {
			b.Run(s.Name+"/"+kind, func(b *testing.B) {
				f := load(b, s)
				ctx := context.Background()
				var eval func(decision.Call) error
				if kind == "generated" {
					e := f.rulesStep(b)
					eval = func(c decision.Call) error { _, err := e.Evaluate(ctx, c, &engine.Ledger{}); return err }
				} else {
					m, err := bench.NewMatchSchemaRules(ctx, f.w)
					if err != nil {
						b.Fatal(err)
					}
					eval = func(c decision.Call) error {
						in, err := engine.Input(c, &engine.Ledger{})
						if err != nil {
							return err
						}
						_, err = m.Evaluate(ctx, in)
						return err
					}
				}
				calls := f.w.Fresh(b.N)
				bench.Timed(b, func(i int) {
					if err := eval(calls[i]); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// policyParts are the parts of the policy BenchmarkPolicyParts measures
// alone, each with everything it uses (docs/performance.md).
var policyParts = []struct{ name, query string }{
	{"empty", "x := 1"},
	{"decision", "data.mcpx.decision"},
	{"input-validation", "data.mcpx.lib.req.problems"},
	{"hidden", "data.mcpx.steps.hidden.applies"},
	{"write", "data.mcpx.lib.call.write"},
	{"write-mode", "data.mcpx.lib.call.write_mode"},
	{"unknown-args-mode", "data.mcpx.lib.call.unknown_args_mode"},
	{"unknown-args", "data.mcpx.steps.unknown_args.unknown"},
	{"rules-matched", "data.mcpx.steps.rules.matched"},
	{"rules-targets", "data.mcpx.steps.rules.targets"},
	{"rules-violations", "data.mcpx.steps.rules._violations"},
	{"rules-step", "data.mcpx.steps.rules.deny"},
	{"ledger-step", "data.mcpx.steps.ledger.deny"},
}

// BenchmarkPolicyParts evaluates each part of the policy as its own query
// on M calls: allocs/op says what each part costs (stable on a busy
// machine, unlike time). Not part of make bench:
//
//	go test -run '^$' -bench PolicyParts -benchmem -benchtime 500x ./internal/engine/
//
// MCPX_PARTS="query;;query…" measures those queries instead.
func BenchmarkPolicyParts(b *testing.B) {
	parts := policyParts
	if q := os.Getenv("MCPX_PARTS"); q != "" {
		parts = nil
		for _, x := range strings.Split(q, ";;") {
			parts = append(parts, struct{ name, query string }{x, x})
		}
	}
	for _, part := range parts {
		b.Run(part.name, func(b *testing.B) {
			e, ins := prepareOnM(b, part.query, b.N)
			ctx := context.Background()
			bench.Timed(b, func(i int) {
				if _, err := e.EvaluateInput(ctx, ins[i]); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkPolicyProfile prints OPA's profile of the whole decision as the
// engine evaluates it (memo on, tools seen) on M calls: per expression, the
// time and the evaluations per call, the costliest first; then the rule and
// function bodies entered per call, the unit the cost model counts
// (docs/performance.md). Not part of make bench:
//
//	go test -run '^$' -bench PolicyProfile -benchtime 300x ./internal/engine/
//
// MCPX_PROFILE=query profiles another query. (go test runs a benchmark once
// with b.N = 1 first; that run prints nothing.)
func BenchmarkPolicyProfile(b *testing.B) {
	if b.N == 1 {
		return
	}
	query := "data.mcpx.decision"
	if q := os.Getenv("MCPX_PROFILE"); q != "" {
		query = q
	}
	e, ins := prepareOnM(b, query, b.N)
	p := profiler.New()
	bodies := bodyCounter{}
	ctx := context.Background()
	for _, in := range ins {
		if _, err := e.EvaluateInput(ctx, in, rego.EvalQueryTracer(p), rego.EvalQueryTracer(bodies)); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(len(ins))
	fmt.Printf("\n%d calls; per call: time (profiler on)  evaluations  location\n", len(ins))
	for _, s := range p.ReportTopNResults(40, []string{"total_time_ns"}) {
		fmt.Printf("%9.1f µs %6.1f  %s\n", float64(s.ExprTimeNs)/n/1e3, float64(s.NumEval)/n, s.Location)
	}
	names := slices.SortedFunc(maps.Keys(bodies), func(a, b string) int {
		if d := bodies[b] - bodies[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	total := 0
	for _, c := range bodies {
		total += c
	}
	fmt.Printf("\nrule and function bodies entered per call: %.1f\n", float64(total)/n)
	for _, name := range names {
		fmt.Printf("%6.2f  %s\n", float64(bodies[name])/n, name)
	}
}

// bodyCounter counts, by file, name and line, the rule and function bodies
// an evaluation enters.
type bodyCounter map[string]int

func (bodyCounter) Enabled() bool { return true }

func (bodyCounter) Config() topdown.TraceConfig { return topdown.TraceConfig{} }

func (c bodyCounter) TraceEvent(ev topdown.Event) {
	if r, ok := ev.Node.(*ast.Rule); ok && ev.Op == topdown.EnterOp {
		c[fmt.Sprintf("%s:%d %s", filepath.Base(r.Location.File), r.Location.Row, r.Head.Ref())]++
	}
}

// prepareOnM prepares query on the M policy and builds n fresh M inputs,
// evaluated once each so the per-tool facts are memoized, as in
// internal/bench's BenchmarkDecide (evaluating them again still computes
// everything that depends on the arguments).
func prepareOnM(b *testing.B, query string, n int) (*engine.Prepared, []ast.Value) {
	f := load(b, bench.M)
	e, err := engine.Prepare(context.Background(), f.policy(b), engine.WithQuery(query))
	if err != nil {
		b.Fatal(err)
	}
	calls := f.w.Fresh(n)
	ins := make([]ast.Value, len(calls))
	for i, c := range calls {
		if ins[i], err = engine.Input(c, &engine.Ledger{}); err != nil {
			b.Fatal(err)
		}
		if _, err := e.EvaluateInput(context.Background(), ins[i]); err != nil {
			b.Fatal(err)
		}
	}
	return e, ins
}

// rulesStep prepares the engine's argument-rules step alone (once).
func (f *fixture) rulesStep(b *testing.B) *engine.Prepared {
	b.Helper()
	p := f.policy(b)
	fixMu.Lock()
	defer fixMu.Unlock()
	if f.rules != nil {
		return f.rules
	}
	var err error
	if f.rules, err = engine.Prepare(context.Background(), p, engine.WithQuery("data.mcpx.steps.rules.deny")); err != nil {
		b.Fatal(err)
	}
	return f.rules
}
