package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/sweep"
	"github.com/mcpx/mcpx-policy/opabundle"
)

// fixture is a workload with everything prepared once per process: the SDK
// engine and the native baseline.
type fixture struct {
	w      *Workload
	dir    string
	opts   mcpxpolicy.Options
	eng    *mcpxpolicy.Engine
	warm   sync.Once // eng has decided one call on every tool
	native *Native
	// stockPQ is the bundle's policy prepared as a stock OPA prepares it
	stockPQ *rego.PreparedEvalQuery
}

var (
	fixMu    sync.Mutex
	fixtures = map[string]*fixture{}
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
	prepareState(b, f.opts.StateDir)
	if f.eng, err = mcpxpolicy.New(context.Background(), f.opts); err != nil {
		b.Fatal(err)
	}
	if f.native, err = NewNative(f.w); err != nil {
		b.Fatal(err)
	}
	fixtures[s.Name] = f
	return f
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
// engine has seen every tool of the workload accept a call and refuse one
// (warmTools, as a gateway has after a few calls per tool): each tool's
// config facts are memoized (ADR 0005), its refusals' planned answer kept
// (ADR 0036), the arguments are new on every call.
func BenchmarkDecide(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			f.warmTools(b)
			calls := f.w.Fresh(b.N)
			ctx := context.Background()
			TimedByClass(b, func(i int) string {
				d, err := f.eng.Decide(ctx, calls[i])
				if err != nil {
					b.Fatal(err)
				}
				return outcomeClass(d)
			})
		})
	}
}

// warmTools decides two calls on every tool of every server, once: one
// the argument rules accept and one they refuse (a path outside the
// workspace), as a gateway has met each tool's common and refusal paths
// after a while.
func (f *fixture) warmTools(b testing.TB) {
	f.warm.Do(func() {
		ctx := context.Background()
		for _, srv := range f.w.Servers {
			for _, t := range srv.Tools {
				for _, path := range []string{"/workspace/warm", "/etc/warm"} {
					if _, err := f.eng.Decide(ctx, decision.Call{Server: srv.Name, Tool: t, Args: map[string]any{"path": path}}); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	})
}

// BenchmarkDecideWarm repeats 200 calls: after the first round every
// decision comes from the decision cache.
func BenchmarkDecideWarm(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			calls := f.w.Fresh(200)
			ctx := context.Background()
			for _, c := range calls {
				if _, err := f.eng.Decide(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
			Timed(b, func(i int) {
				if _, err := f.eng.Decide(ctx, calls[i%len(calls)]); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkNative is the same steps in plain Go with santhosh v6, timed
// by outcome class as BenchmarkDecide is (benchtable prints each class's
// engine / native ratio).
func BenchmarkNative(b *testing.B) {
	for _, s := range shapes {
		b.Run(s.Name, func(b *testing.B) {
			f := load(b, s)
			calls := f.w.Fresh(b.N)
			TimedByClass(b, func(i int) string { return outcomeClass(f.native.Decide(calls[i])) })
		})
	}
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
			calls := f.w.Fresh(b.N)
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
			Timed(b, func(i int) {
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
			calls := f.w.Fresh(b.N)
			bodies := make([][]byte, len(calls))
			for i, c := range calls {
				in, err := f.eng.OPAInput(c)
				if err != nil {
					b.Fatal(err)
				}
				bodies[i] = append(append([]byte(`{"input": `), in...), '}')
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			Timed(b, func(i int) {
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
	files, err := mcpxpolicy.BundleFiles(f.opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := opabundle.WriteArchive(files, tarball); err != nil {
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
	sweep.LessGC()
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
		raw, err := engine.InputJSON(c, &engine.Ledger{})
		if err != nil {
			t.Fatal(err)
		}
		in, err := ast.ValueFromReader(bytes.NewReader(raw))
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
