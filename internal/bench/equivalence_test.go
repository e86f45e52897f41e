package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/assemble"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// enginePolicy is the policy opts compile to, as the SDK hands it to the
// engine: the static and generated Rego, the data, and the rules' schemas
// for the Go predicates.
func enginePolicy(tb testing.TB, opts mcpxpolicy.Options) engine.Policy {
	tb.Helper()
	c, err := config.Load(config.LoadOptions{Paths: opts.ConfigPaths, Env: opts.Env, SchemaCompiler: schemarego.Compile})
	if err != nil {
		tb.Fatal(err)
	}
	return assemble.Policy(c)
}

// TestEngineEqualsPureRego decides workload calls on the embedded engine
// (its Go predicates, memo and plans) and on the same policy evaluated as
// stock OPA evaluates a bundle (OPA's rego package, the predicates in
// Rego, no engine caches), and requires the whole decision documents to be
// equal: 2,000 M calls and 1,000 L calls, with caller modes, ledger entries,
// unreadable ledgers and missing annotations mixed in (Variant); a quick
// run decides every sweep.Stride-th of them.
func TestEngineEqualsPureRego(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the M and L workloads")
	}
	for _, tc := range []struct {
		shape     Shape
		calls     int
		overrides bool
		pins      bool
	}{{M, 2000, false, false}, {L, 1000, false, false}, {M, 500, true, false}, {M, 1000, false, true}} {
		name := tc.shape.Name
		if tc.overrides {
			name += "+overrides"
		}
		if tc.pins {
			name += "+pins+shadow"
		}
		t.Run(name, func(t *testing.T) {
			w := Generate(tc.shape)
			dir := t.TempDir()
			opts, err := w.Options(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tc.overrides {
				// an operator override that asks about some calls and denies
				// others (by their arguments): the engine then asks the
				// overrides in its common case, and evaluates whole
				opts.ConfigPaths = append(opts.ConfigPaths, writeOverrides(t, dir))
			}
			if tc.pins {
				opts.ConfigPaths = append(opts.ConfigPaths, writePinsAndShadow(t, dir, w))
			}
			p := enginePolicy(t, opts)
			eng, err := engine.Prepare(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			stock := stockQuery(t, p, "rego")
			outcomes := map[string]int{}
			for i := 0; i < tc.calls; i++ {
				if !sweep.Take(i) {
					continue
				}
				call, led := Variant(i, w.Call(i))
				if tc.pins {
					led.Pin = pinVariant(i)
				}
				got, err := eng.Decide(context.Background(), call, led)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				want := stockDecide(t, stock, call, led)
				outcomes[fmt.Sprintf("%s/%s", got.Outcome, got.Step)]++
				if g, w := asJSON(t, got), asJSON(t, want); !reflect.DeepEqual(g, w) {
					gj, _ := json.MarshalIndent(g, "", "  ")
					wj, _ := json.MarshalIndent(w, "", "  ")
					t.Fatalf("call %d (%s.%s): the engine decided\n%s\npure Rego decided\n%s", i, call.Server, call.Tool.Name, gj, wj)
				}
			}
			t.Logf("%s, equal; outcomes %v", sweep.Describe(tc.calls), outcomes)
		})
	}
}

// writeOverrides writes an overrides layer into dir and returns its path.
func writeOverrides(t *testing.T, dir string) string {
	t.Helper()
	rego := `package mcpx.overrides

deny contains {"code": "NoProject3", "message": sprintf("no writes to %s", [input.args.path])} if {
	contains(input.args.path, "/project3/")
}

ask contains {"code": "Tagged", "message": "a tag needs a look", "tag": input.args.tags[0]} if {
	startswith(input.args.tags[0], "alpha")
}
`
	if err := os.WriteFile(filepath.Join(dir, "overrides.rego"), []byte(rego), 0o644); err != nil {
		t.Fatal(err)
	}
	layer := filepath.Join(dir, "overrides.yaml")
	if err := os.WriteFile(layer, []byte("version: 1\npolicy:\n  overrides: [overrides.rego]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return layer
}

// writePinsAndShadow writes a layer into dir that pins tool definitions
// (ask on the pool, deny on one server, off on another) and puts two
// servers in shadow mode, and returns its path.
func writePinsAndShadow(t *testing.T, dir string, w *Workload) string {
	t.Helper()
	layer := filepath.Join(dir, "pins.yaml")
	yaml := fmt.Sprintf(`version: 1
pool:
  pinTools: ask
servers:
  %s:
    pinTools: deny
    enforce: shadow
  %s:
    enforce: shadow
  %s:
    pinTools: "off"
`, w.Servers[1].Name, w.Servers[2].Name, w.Servers[3].Name)
	if err := os.WriteFile(layer, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return layer
}

// pinVariant is call i's pin: mostly the pinned definition, sometimes a
// new, changed or unreadable one, or none (an InvalidInput where pinning
// is on).
func pinVariant(i int) *engine.Pin {
	const a, b = "1111111111111111111111111111111111111111111111111111111111111111", "2222222222222222222222222222222222222222222222222222222222222222"
	switch i % 11 {
	case 1:
		return &engine.Pin{Status: "new", SHA256: a}
	case 2:
		return &engine.Pin{Status: "changed", SHA256: b, PinnedSHA256: a, Changed: []string{"description"}}
	case 3:
		return &engine.Pin{Status: "error", Error: "the pin store is unreadable"}
	case 4:
		return nil
	}
	return &engine.Pin{Status: "ok", SHA256: a}
}

// stockDecide evaluates the decision for call on a stock query, with the
// input a stock OPA server would decode (numbers keep their text).
func stockDecide(tb testing.TB, pq rego.PreparedEvalQuery, call decision.Call, led *engine.Ledger) decision.Decision {
	tb.Helper()
	raw, err := engine.InputJSON(call, led)
	if err != nil {
		tb.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var in any
	if err := dec.Decode(&in); err != nil {
		tb.Fatal(err)
	}
	rs, err := pq.Eval(context.Background(), rego.EvalInput(in))
	if err != nil || len(rs) != 1 {
		tb.Fatalf("stock evaluation: %v %v", rs, err)
	}
	d, err := engine.FromValue(rs[0].Expressions[0].Value)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// asJSON is v as decoded JSON, so two decisions compare field by field.
func asJSON(tb testing.TB, v any) any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatal(err)
	}
	return out
}
