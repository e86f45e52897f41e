package bench

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	_ "github.com/open-policy-agent/opa/v1/features/wasm" // OPA's Wasm engine (wazero), for rego.Target("wasm")
	"github.com/open-policy-agent/opa/v1/rego"
)

// BenchmarkOPATargets evaluates the M decision with OPA's two evaluators,
// the same Rego and data, no engine caches: "rego" is OPA's interpreter
// (what the engine runs, here without its memo), "wasm" the policy
// compiled to WebAssembly by OPA and run by its wazero-based engine. It
// settles whether compiling the policy would get near the latency targets
// (ADR 0005); the two must decide every call identically first. Not part
// of make bench:
//
//	go test -run '^$' -bench OPATargets -benchmem -benchtime 1000x ./internal/bench/
func BenchmarkOPATargets(b *testing.B) {
	f := load(b, M)
	p := f.policy(b)
	calls := f.w.Fresh(200)
	ins := jsonInputs(b, calls)
	ctx := context.Background()
	prepared := map[string]rego.PreparedEvalQuery{}
	for _, target := range []string{"rego", "wasm"} {
		start := time.Now()
		prepared[target] = stockQuery(b, p, target)
		b.Logf("%s: prepared in %v", target, time.Since(start))
	}
	for i, in := range ins {
		var got [2]string
		for j, target := range []string{"rego", "wasm"} {
			rs, err := prepared[target].Eval(ctx, rego.EvalInput(in))
			if err != nil || len(rs) != 1 {
				b.Fatalf("%s: %v %v", target, rs, err)
			}
			raw, _ := json.Marshal(rs[0].Expressions[0].Value)
			got[j] = string(raw)
		}
		if got[0] != got[1] {
			b.Fatalf("call %d: the evaluators disagree:\nrego %s\nwasm %s", i, got[0], got[1])
		}
	}
	for _, target := range []string{"rego", "wasm"} {
		b.Run(target, func(b *testing.B) {
			pq := prepared[target]
			Timed(b, func(i int) {
				if _, err := pq.Eval(ctx, rego.EvalInput(ins[i%len(ins)])); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
