package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/profiler"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/decision"
	"github.com/mcpx/mcpx-policy/internal/engine"
)

// fixture is a workload with everything prepared once per process: the SDK
// engine, the native baseline and the json.match_schema policy.
type fixture struct {
	w      *Workload
	dir    string
	opts   mcpxpolicy.Options
	eng    *mcpxpolicy.Engine
	warm   sync.Once      // eng has decided one call on every tool
	cold   *engine.Engine // an engine without the per-tool memo (engine.WithoutFunctionMemo)
	native *Native
	ms     *MatchSchema
	rules  *engine.Engine // the argument-rules step alone
	// stockPQ is the bundle's policy prepared as a stock OPA prepares it
	stockPQ *rego.PreparedEvalQuery
}

var (
	fixMu    sync.Mutex
	fixtures = map[string]*fixture{}
	// seq numbers the calls handed out, so no two timed decisions in a
	// process see the same call: "distinct calls" stay distinct across
	// -count runs and never hit the decision cache.
	seq atomic.Int64
)

func load(b testing.TB, s Shape) *fixture {
	b.Helper()
	fixMu.Lock()
	defer fixMu.Unlock()
	if f := fixtures[s.Name]; f != nil {
		return f
	}
	f := &fixture{w: Generate(s)}
	dir, err := os.MkdirTemp("", "mcpx-bench-"+s.Name)
	if err != nil {
		b.Fatal(err)
	}
	f.dir = dir
	if f.opts, err = f.w.Options(dir); err != nil {
		b.Fatal(err)
	}
	if f.eng, err = mcpxpolicy.New(context.Background(), f.opts); err != nil {
		b.Fatal(err)
	}
	if f.native, err = NewNative(f.w); err != nil {
		b.Fatal(err)
	}
	if f.ms, err = NewMatchSchema(context.Background(), f.w); err != nil {
		b.Fatal(err)
	}
	fixtures[s.Name] = f
	return f
}

// fresh returns n calls never handed out before in this process.
func (f *fixture) fresh(n int) []decision.Call {
	start := int(seq.Add(int64(n))) - n
	calls := make([]decision.Call, n)
	for i := range calls {
		calls[i] = f.w.Call(1_000_000 + start + i)
	}
	return calls
}

// timed runs one(i) b.N times, timing each call, and reports the p50 and
// p99 of those per-call timings next to ns/op.
func timed(b *testing.B, one func(i int)) {
	b.Helper()
	timedByClass(b, func(i int) string { one(i); return "" })
}

// timedByClass is timed for calls that name their class (a decision's
// outcome and step): besides p50 and p99 over all calls it reports, per
// class, p50 ("<class>-p50-ns"), p99 and the share of calls ("<class>-pct").
// The class is named after the call's timing ends.
func timedByClass(b *testing.B, one func(i int) string) {
	b.Helper()
	ds := make([]time.Duration, b.N)
	classes := make([]string, b.N)
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		c := one(i)
		ds[i] = time.Since(t0)
		classes[i] = c
	}
	b.StopTimer()
	by := map[string][]time.Duration{}
	for i, c := range classes {
		if c != "" {
			by[c] = append(by[c], ds[i])
		}
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(ds[min(len(ds)-1, len(ds)*99/100)].Nanoseconds()), "p99-ns")
	for c, cds := range by {
		slices.Sort(cds)
		b.ReportMetric(float64(cds[len(cds)/2].Nanoseconds()), c+"-p50-ns")
		b.ReportMetric(float64(cds[min(len(cds)-1, len(cds)*99/100)].Nanoseconds()), c+"-p99-ns")
		b.ReportMetric(100*float64(len(cds))/float64(len(ds)), c+"-pct")
	}
}

// outcomeClass names a decision's class for the per-outcome figures:
// "allow", "ask:<step>" or "deny:<step>", and "+warn" when it carries a
// warning.
func outcomeClass(d decision.Decision) string {
	c := string(d.Outcome)
	if d.Step != "" {
		c += ":" + string(d.Step)
	}
	if len(d.Warnings) > 0 {
		c += "+warn"
	}
	return c
}

var shapes = []Shape{M, L}

// BenchmarkDecide is the embedded engine through the SDK (ledger read,
// canonical hash, input, evaluation, output) on distinct calls, once the
// engine has seen every tool of the workload once (as a gateway has after
// a few calls per tool): each tool's config facts are memoized (ADR 0005),
// the arguments are new on every call.
func BenchmarkDecide(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			f.warmTools(b)
			calls := f.fresh(b.N)
			ctx := context.Background()
			timedByClass(b, func(i int) string {
				d, err := f.eng.Decide(ctx, calls[i])
				if err != nil {
					b.Fatal(err)
				}
				return outcomeClass(d)
			})
		})
	}
}

// warmTools decides one call on every tool of every server, once.
func (f *fixture) warmTools(b testing.TB) {
	f.warm.Do(func() {
		ctx := context.Background()
		for _, srv := range f.w.Servers {
			for _, t := range srv.Tools {
				if _, err := f.eng.Decide(ctx, decision.Call{Server: srv.Name, Tool: t, Args: map[string]any{"path": "/workspace/warm"}}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkDecideNewTools is BenchmarkDecide on an engine that memoizes no
// function (engine.WithoutFunctionMemo): every call pays what the first
// call on a tool pays. It asks the engine directly, with an empty ledger,
// as the SDK's Decide does for a call with nothing in the ledger.
func BenchmarkDecideNewTools(b *testing.B) {
	for _, s := range shapes {
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
			calls := f.fresh(b.N)
			ctx := context.Background()
			timed(b, func(i int) {
				if _, err := f.cold.Decide(ctx, calls[i], &engine.Ledger{}); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkDecideWarm repeats 200 calls: after the first round every
// decision comes from the decision cache.
func BenchmarkDecideWarm(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			calls := f.fresh(200)
			ctx := context.Background()
			for _, c := range calls {
				if _, err := f.eng.Decide(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
			timed(b, func(i int) {
				if _, err := f.eng.Decide(ctx, calls[i%len(calls)]); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkNative is the same steps in plain Go with santhosh v6.
func BenchmarkNative(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			calls := f.fresh(b.N)
			timed(b, func(i int) { f.native.Decide(calls[i]) })
		})
	}
}

// BenchmarkMatchSchema is the config as a Rego user would write it with
// json.match_schema, on the same input document (input building included).
func BenchmarkMatchSchema(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			calls := f.fresh(b.N)
			ctx := context.Background()
			timed(b, func(i int) {
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
	for _, s := range shapes {
		for _, kind := range []string{"generated", "match_schema"} {
			b.Run(s.Name+"/"+kind, func(b *testing.B) {
				f := load(b, s)
				ctx := context.Background()
				var eval func(decision.Call) error
				if kind == "generated" {
					e := f.rulesStep(b)
					eval = func(c decision.Call) error { _, err := e.Evaluate(ctx, c, &engine.Ledger{}); return err }
				} else {
					m, err := NewMatchSchemaRules(ctx, f.w)
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
				calls := f.fresh(b.N)
				timed(b, func(i int) {
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
//	go test -run '^$' -bench PolicyParts -benchmem -benchtime 500x ./internal/bench/
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
			timed(b, func(i int) {
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
//	go test -run '^$' -bench PolicyProfile -benchtime 300x ./internal/bench/
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
// BenchmarkDecide (evaluating them again still computes everything that
// depends on the arguments).
func prepareOnM(b *testing.B, query string, n int) (*engine.Engine, []ast.Value) {
	f := load(b, M)
	e, err := engine.Prepare(context.Background(), f.policy(b), engine.WithQuery(query))
	if err != nil {
		b.Fatal(err)
	}
	calls := f.fresh(n)
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

// policy returns the fixture's policy as the SDK hands it to the engine.
func (f *fixture) policy(b *testing.B) engine.Policy {
	return enginePolicy(b, f.opts)
}

// bundlePolicy is the policy of the bundle opts compile to.
func bundlePolicy(tb testing.TB, opts mcpxpolicy.Options) engine.Policy {
	tb.Helper()
	files, err := mcpxpolicy.BundleFiles(opts)
	if err != nil {
		tb.Fatal(err)
	}
	p := engine.Policy{Modules: map[string]string{}}
	for name, src := range files {
		switch {
		case strings.HasSuffix(name, ".rego"):
			p.Modules[name] = string(src)
		case name == "data.json":
			var doc struct {
				Mcpx map[string]any `json:"mcpx"`
			}
			if err := json.Unmarshal(src, &doc); err != nil {
				tb.Fatal(err)
			}
			p.Data = doc.Mcpx
		}
	}
	return p
}

// stockQuery prepares data.mcpx.decision from p as a stock OPA does: OPA's
// rego package and default in-memory store, none of the engine's caches.
// target is OPA's evaluator, "rego" or "wasm".
func stockQuery(tb testing.TB, p engine.Policy, target string) rego.PreparedEvalQuery {
	tb.Helper()
	opts := []func(*rego.Rego){
		rego.Query("data.mcpx.decision"),
		rego.Target(target),
		rego.Store(inmem.NewFromObject(map[string]any{"mcpx": p.Data})),
		rego.SetRegoVersion(ast.RegoV1),
	}
	for name, src := range p.Modules {
		opts = append(opts, rego.Module(name, src))
	}
	pq, err := rego.New(opts...).PrepareForEval(context.Background())
	if err != nil {
		tb.Fatalf("%s: %v", target, err)
	}
	return pq
}

// jsonInputs are the calls' input documents as a stock OPA receives them:
// decoded JSON.
func jsonInputs(tb testing.TB, calls []decision.Call) []any {
	tb.Helper()
	ins := make([]any, len(calls))
	for i, c := range calls {
		raw, err := engine.InputJSON(c, &engine.Ledger{})
		if err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal(raw, &ins[i]); err != nil {
			tb.Fatal(err)
		}
	}
	return ins
}

// rulesStep prepares the engine's argument-rules step alone (once).
func (f *fixture) rulesStep(b *testing.B) *engine.Engine {
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

// BenchmarkStockOPA is the bundle's policy evaluated in this process as a
// stock OPA server evaluates it (OPA's rego package, its default in-memory
// store, none of the engine's caches or predicates), on the input document
// a gateway sends, decoded as OPA's server decodes it: the evaluation
// without the HTTP round trip of BenchmarkOPAServer, with its allocations.
func BenchmarkStockOPA(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			pq := f.stock(b)
			calls := f.fresh(b.N)
			ins := make([]any, len(calls))
			for i, c := range calls {
				raw, err := f.eng.OPAInput(c)
				if err != nil {
					b.Fatal(err)
				}
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.UseNumber()
				if err := dec.Decode(&ins[i]); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			timed(b, func(i int) {
				if rs, err := pq.Eval(ctx, rego.EvalInput(ins[i])); err != nil || len(rs) != 1 {
					b.Fatalf("%v %v", rs, err)
				}
			})
		})
	}
}

// stock prepares (once) the fixture's bundle as a stock OPA does.
func (f *fixture) stock(b *testing.B) rego.PreparedEvalQuery {
	b.Helper()
	p := bundlePolicy(b, f.opts)
	fixMu.Lock()
	defer fixMu.Unlock()
	if f.stockPQ == nil {
		pq := stockQuery(b, p, "rego")
		f.stockPQ = &pq
	}
	return *f.stockPQ
}

// BenchmarkPrepare loads, compiles and prepares the config (mcpxpolicy.New)
// and reports the live heap the prepared engine holds.
func BenchmarkPrepare(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			var keep []*mcpxpolicy.Engine
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				eng, err := mcpxpolicy.New(context.Background(), f.opts)
				if err != nil {
					b.Fatal(err)
				}
				keep = append(keep, eng)
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(keep))/(1<<20), "heap-MiB")
			runtime.KeepAlive(keep)
		})
	}
}

// BenchmarkOPAServer is the HTTP round trip to a stock `opa run --server`
// holding the workload's bundle: POST /v1/data/mcpx/decision with the
// engine's input document, over loopback with keep-alive.
func BenchmarkOPAServer(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			base := f.server(b)
			calls := f.fresh(b.N)
			bodies := make([][]byte, len(calls))
			for i, c := range calls {
				in, err := f.eng.OPAInput(c)
				if err != nil {
					b.Fatal(err)
				}
				bodies[i] = append(append([]byte(`{"input": `), in...), '}')
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			timed(b, func(i int) {
				resp, err := client.Post(base+"/v1/data/mcpx/decision", "application/json", bytes.NewReader(bodies[i]))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("opa: %s", resp.Status)
				}
			})
		})
	}
}

var (
	serverMu sync.Mutex
	servers  = map[string]string{}
)

// server starts (once per process) a stock OPA server with the fixture's
// bundle and returns its base URL.
func (f *fixture) server(b *testing.B) string {
	b.Helper()
	serverMu.Lock()
	defer serverMu.Unlock()
	if u := servers[f.w.Shape.Name]; u != "" {
		return u
	}
	tarball := filepath.Join(f.dir, "bundle.tar.gz")
	if err := mcpxpolicy.WriteBundleArchive(f.opts, tarball); err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "-n", "opa").Output()
	if err != nil {
		b.Fatalf("go tool -n opa: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(strings.TrimSpace(string(out)), "run", "--server", "--addr", addr, "--log-level", "error",
		"--disable-telemetry", "--bundle", tarball)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stopMu.Lock()
	stops = append(stops, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	stopMu.Unlock()
	base := "http://" + addr
	for deadline := time.Now().Add(300 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/health?bundles=true"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				servers[f.w.Shape.Name] = base
				return base
			}
		}
	}
	b.Fatalf("opa server did not start: %s", stderr.String())
	return ""
}

var (
	stopMu sync.Mutex
	stops  []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopMu.Lock()
	for _, stop := range stops {
		stop()
	}
	stopMu.Unlock()
	for _, f := range fixtures {
		os.RemoveAll(f.dir)
	}
	os.Exit(code)
}

// TestBaselinesAgree checks that the native baseline decides what the
// engine decides (outcome and step) on M, so the ratio compares the same
// work, and reports how often the json.match_schema policy agrees (it reads
// the schemas as draft-07, so it may not).
func TestBaselinesAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("prepares the M workload")
	}
	w := Generate(M)
	opts, err := w.Options(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	nat, err := NewNative(w)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := NewMatchSchema(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	agree := 0
	outcomes := map[string]int{}
	for i, c := range w.Calls[:500] {
		d, err := eng.Decide(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		outcomes[fmt.Sprintf("%s/%s", d.Outcome, d.Step)]++
		n := nat.Decide(c)
		if n.Outcome != d.Outcome || n.Step != d.Step || n.Write != d.Write || n.Destructive != d.Destructive || n.Call != d.Call {
			t.Errorf("call %d %s.%s: native %s/%s, engine %s/%s (%s)", i, c.Server, c.Tool.Name, n.Outcome, n.Step, d.Outcome, d.Step, d.First().Message)
		}
		in, err := engine.Input(c, &engine.Ledger{})
		if err != nil {
			t.Fatal(err)
		}
		o, s, err := ms.Decide(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if o == string(d.Outcome) && s == string(d.Step) {
			agree++
		}
	}
	t.Logf("engine outcomes on 500 M calls: %v", outcomes)
	t.Logf("json.match_schema policy agrees on %d of 500", agree)
	if len(outcomes) < 5 {
		t.Errorf("the workload exercises too few outcomes: %v", outcomes)
	}
}

// TestConcurrentDecide decides M calls from several goroutines at once (the
// memo, the builtin cache and the decision cache are shared) and requires
// every decision to equal a fresh engine's serial one. Run it with -race.
func TestConcurrentDecide(t *testing.T) {
	if testing.Short() {
		t.Skip("prepares the M workload twice")
	}
	w := Generate(M)
	opts, err := w.Options(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	serial, err := mcpxpolicy.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := mcpxpolicy.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	calls := w.Calls[:150]
	want := make([]string, len(calls))
	for i, c := range calls {
		d, err := serial.Decide(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = fmt.Sprintf("%+v", d)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for r := 0; r < 2; r++ {
				for j := range calls {
					i := (j + g*37) % len(calls)
					d, err := shared.Decide(context.Background(), calls[i])
					if err != nil {
						t.Error(err)
						return
					}
					if got := fmt.Sprintf("%+v", d); got != want[i] {
						t.Errorf("call %d decided differently under concurrency:\n%s\nwant\n%s", i, got, want[i])
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
}
