package bench

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/engine"
)

// shared is a reference workload as the equivalence tests use it, built
// once per test process (compiling L costs seconds, for the engine and
// again for a stock OPA): its config on disk, the policy the SDK hands the
// engine, the engine prepared on it, and its modules compiled as a stock
// OPA compiles them (stockOn prepares the decision on them with any data:
// the bundle's, a layer's that changes only data). The engine's caches
// never change a decision, so tests may share it.
type shared struct {
	w     *Workload
	dir   string
	opts  mcpxpolicy.Options
	pol   engine.Policy
	eng   *engine.Prepared
	stock *ast.Compiler
}

var (
	sharedMu sync.Mutex
	shareds  = map[string]*shared{} // removed by TestMain
)

// sharedOf is the shared workload of shape s.
func sharedOf(t testing.TB, s Shape) *shared {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sh := shareds[s.Name]; sh != nil {
		return sh
	}
	dir, err := os.MkdirTemp("", "mcpx-bench-shared-"+s.Name)
	if err != nil {
		t.Fatal(err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	sh := &shared{w: Generate(s), dir: dir}
	if sh.opts, err = sh.w.Options(dir); err != nil {
		t.Fatal(err)
	}
	sh.pol = enginePolicy(t, sh.opts)
	if sh.eng, err = engine.Prepare(context.Background(), sh.pol); err != nil {
		t.Fatal(err)
	}
	// the compiler rego.New makes when it is given none (stockQuery)
	sh.stock = ast.NewCompiler().WithUseTypeCheckAnnotations(true).WithDefaultRegoVersion(ast.RegoV1)
	opts := []func(*rego.Rego){rego.Compiler(sh.stock), rego.Query("true"), rego.Store(inmem.New()), rego.SetRegoVersion(ast.RegoV1)}
	for name, src := range sh.pol.Modules {
		opts = append(opts, rego.Module(name, src))
	}
	if _, err := rego.New(opts...).PrepareForEval(context.Background()); err != nil {
		t.Fatal(err)
	}
	ok = true
	shareds[s.Name] = sh
	return sh
}

// stockOn is stockQuery(p, "rego"): on the shared compile when p's modules
// are the workload's, else compiled on its own.
func (sh *shared) stockOn(tb testing.TB, p engine.Policy) rego.PreparedEvalQuery {
	tb.Helper()
	same := len(p.Modules) == len(sh.pol.Modules)
	for name, src := range p.Modules {
		if s, ok := sh.pol.Modules[name]; !ok || s != src {
			same = false
			break
		}
	}
	if !same {
		return stockQuery(tb, p, "rego")
	}
	pq, err := rego.New(
		rego.Compiler(sh.stock),
		rego.Query("data.mcpx.decision"),
		rego.Target("rego"),
		rego.Store(inmem.NewFromObject(map[string]any{"mcpx": p.Data})),
		rego.SetRegoVersion(ast.RegoV1),
	).PrepareForEval(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return pq
}
