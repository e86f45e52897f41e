package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/mcpx/mcpx-policy/internal/bench"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/jsonsuite"
)

// stockOPA is a policy as a stock OPA compiles it (every predicate in
// Rego), with the predicates' harness: compiled once, it prepares any
// query (the harness's, the decision) on the same compiled modules. A
// compile of the L workload costs seconds; the equivalence tests on one
// policy share one.
type stockOPA struct {
	mods     map[string]string // the modules compiled, the harness with them
	compiler *ast.Compiler
	store    storage.Store
}

// newStock compiles p's modules and the harness as a stock OPA does, with
// p's data in its store.
func newStock(t testing.TB, p engine.Policy) *stockOPA {
	t.Helper()
	// the compiler rego.New makes when it is given none
	c := ast.NewCompiler().WithUseTypeCheckAnnotations(true).WithDefaultRegoVersion(ast.RegoV1)
	s := &stockOPA{mods: map[string]string{"mcpx_predicates_harness.rego": harness}, compiler: c}
	maps.Copy(s.mods, p.Modules)
	s.store = stockStore(t, p)
	opts := []func(*rego.Rego){rego.Compiler(s.compiler), rego.Query("true"), rego.Store(s.store), rego.SetRegoVersion(ast.RegoV1)}
	for n, src := range s.mods {
		opts = append(opts, rego.Module(n, src))
	}
	if _, err := rego.New(opts...).PrepareForEval(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// withData is s on p's data: the same compiled modules, which must be p's.
func (s *stockOPA) withData(t testing.TB, p engine.Policy) *stockOPA {
	t.Helper()
	for n, src := range p.Modules {
		if s.mods[n] != src {
			t.Fatalf("module %s differs: compile the policy on its own", n)
		}
	}
	if len(p.Modules)+1 != len(s.mods) {
		t.Fatalf("%d modules, compiled %d: compile the policy on its own", len(p.Modules), len(s.mods)-1)
	}
	return &stockOPA{mods: s.mods, compiler: s.compiler, store: stockStore(t, p)}
}

// query prepares q on the compiled modules.
func (s *stockOPA) query(t testing.TB, q string) rego.PreparedEvalQuery {
	t.Helper()
	pq, err := rego.New(rego.Compiler(s.compiler), rego.Query(q), rego.Store(s.store), rego.SetRegoVersion(ast.RegoV1)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pq
}

// stockStore is p's data as a stock OPA reads it from a bundle (numbers as
// json.Number).
func stockStore(t testing.TB, p engine.Policy) storage.Store {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"mcpx": p.Data})
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		t.Fatal(err)
	}
	return inmem.NewFromObject(data)
}

// workload is a reference workload as the equivalence sweeps use it,
// built once per test process (the predicates' and the refusals' sweeps
// share it): its config on disk, the policy compiled from it and the
// policy compiled as a stock OPA does.
type workload struct {
	w     *bench.Workload
	dir   string
	paths []string
	pol   engine.Policy
	stock *stockOPA
}

var (
	workloadsMu sync.Mutex
	workloads   = map[string]*workload{} // removed by TestMain
)

// workloadOf is the shared workload of shape s.
func workloadOf(t testing.TB, s bench.Shape) *workload {
	t.Helper()
	workloadsMu.Lock()
	defer workloadsMu.Unlock()
	if wl := workloads[s.Name]; wl != nil {
		return wl
	}
	dir, err := os.MkdirTemp("", "mcpx-engine-workload-"+s.Name)
	if err != nil {
		t.Fatal(err)
	}
	wl := &workload{w: bench.Generate(s), dir: dir}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	opts, err := wl.w.Options(dir)
	if err != nil {
		t.Fatal(err)
	}
	wl.paths = opts.ConfigPaths
	wl.pol = policyOf(t, wl.paths...)
	wl.stock = newStock(t, wl.pol)
	ok = true
	workloads[s.Name] = wl
	return wl
}

// suiteCase is a case of the JSON Schema suite: data as the argument v of
// tool, whose rule is the case's schema.
type suiteCase struct {
	name, tool string
	data       any
}

// jsonSuite is the official JSON Schema suite as one config, built once
// per test process (the predicates' and the refusals' suite sweeps share
// it): every schema the compiler accepts is the argument rule of a tool of
// server s; cases are the cases of those schemas, in the suite's order.
type jsonSuite struct {
	cases []suiteCase
	pol   engine.Policy
	stock *stockOPA
}

var (
	suiteMu sync.Mutex
	suite   *jsonSuite
)

// suiteOf is the shared suite config.
func suiteOf(t testing.TB) *jsonSuite {
	t.Helper()
	suiteMu.Lock()
	defer suiteMu.Unlock()
	if suite != nil {
		return suite
	}
	groups := jsonsuite.Rules(t)
	dir, err := os.MkdirTemp("", "mcpx-engine-suite")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// One load of every rule: each schema the compiler refuses is a load
	// error at its rule's path, and its rule is left out.
	var all strings.Builder
	for _, g := range groups {
		all.WriteString(g.YAML)
	}
	probe := filepath.Join(dir, "probe.yaml")
	if err := os.WriteFile(probe, []byte("version: 1\nservers:\n  s:\n    argumentRules:\n"+all.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := map[int]bool{}
	_, err = config.Load(config.LoadOptions{Paths: []string{probe}, Env: []string{}, SchemaCompiler: schemarego.Compile})
	var ces config.ConfigErrors
	if err != nil && !errors.As(err, &ces) {
		t.Fatal(err)
	}
	at := regexp.MustCompile(`^servers\.s\.argumentRules\[(\d+)\]`)
	for _, ce := range ces {
		m := at.FindStringSubmatch(ce.Path)
		if m == nil {
			t.Fatalf("an error outside the suite's rules: %v", ce)
		}
		i, _ := strconv.Atoi(m[1])
		refused[i] = true
	}
	s := &jsonSuite{}
	var rules strings.Builder
	for i, g := range groups {
		if !refused[i] {
			rules.WriteString(g.YAML)
			for _, c := range g.Cases {
				s.cases = append(s.cases, suiteCase{name: c.Name, tool: g.Tool, data: c.Data})
			}
		}
	}
	cfg := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(cfg, []byte(jsonsuite.RuleHeader+rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s.pol = policyOf(t, cfg)
	s.stock = newStock(t, s.pol)
	suite = s
	return s
}
