package bench

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
)

// TestStockCostIsFlatInConfig: a stock OPA server has no memo, so what the
// policy computes for a call it computes on every query. That must depend
// on the call (its server, its tool, its matched rules), not on the size of
// the config: a policy that once read every rule of the config on every
// call cost a stock OPA 15.7 ms per decision on L against 3.9 ms on M (ADR
// 0006), and no test noticed. Here the bundle's policy is evaluated as a
// stock OPA evaluates it (OPA's rego package, its default in-memory store,
// no engine caches) on 50 calls of each workload, and the allocations per
// decision, which do not depend on the machine's load, are compared (one
// run after a warm-up: allocations do not vary between runs).
func TestStockCostIsFlatInConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the L workload")
	}
	per := map[string]float64{}
	for _, s := range []Shape{M, L} {
		w := Generate(s)
		opts, err := w.Options(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		pq := stockQuery(t, bundlePolicy(t, opts), "rego")
		ins := jsonInputs(t, w.Calls[:50])
		decideAll := func() {
			for _, in := range ins {
				if rs, err := pq.Eval(context.Background(), rego.EvalInput(in)); err != nil || len(rs) != 1 {
					t.Fatalf("%s: %v %v", s.Name, rs, err)
				}
			}
		}
		per[s.Name] = testing.AllocsPerRun(1, decideAll) / float64(len(ins))
	}
	t.Logf("allocations per decision on a stock OPA: M %.0f, L %.0f (%.2f×)", per["M"], per["L"], per["L"]/per["M"])
	if per["L"] > 1.5*per["M"] {
		t.Errorf("a stock OPA's decision costs %.1f× as much on L as on M (%.0f against %.0f allocations): something reads the whole config per call", per["L"]/per["M"], per["L"], per["M"])
	}
}
