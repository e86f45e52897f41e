package schemarego_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// rule is one compiled schema prepared for evaluation the way the rules step
// calls it: data.mcpx.steps.rules.targets[name]["case"] = {"value": input,
// "path": ""}, query data.mcpx.rules.<name>.violations, strict builtins.
type rule struct {
	name string
	src  string
	pq   rego.PreparedEvalQuery
	// cross checks _check (whose first body is the fast predicate) against
	// _s0 (the violations) when the root has both: _check is [] exactly
	// when _s0 is, and when the fast path refuses a value _s0 accepts,
	// _check says so with an internal-error violation
	cross *rego.PreparedEvalQuery
}

func prepare(schema any) (*rule, error) {
	return prepareAt(schema, "")
}

// prepareAt is prepare with the target's path prefix (a per-argument rule).
func prepareAt(schema any, prefix string) (*rule, error) {
	name, err := config.SchemaPackage(schema)
	if err != nil {
		return nil, err
	}
	src, err := schemarego.Compile(schema, name)
	if err != nil {
		return nil, err
	}
	harness := fmt.Sprintf("package mcpx.steps.rules\n\ntargets := {%q: {\"case\": {\"value\": input, \"path\": %q}}}\n", name, prefix)
	pq, err := rego.New(
		rego.Query("data.mcpx.rules."+name+".violations"),
		rego.Module("generated.rego", src),
		rego.Module("harness.rego", harness),
		rego.StrictBuiltinErrors(true),
	).PrepareForEval(context.Background())
	if err != nil {
		return nil, fmt.Errorf("prepare: %w\n%s", err, src)
	}
	r := &rule{name: name, src: src, pq: pq}
	if strings.Contains(src, "\n_check(v, p) := [] if {") && strings.Contains(src, "\n_s0(v, p) :=") {
		q := fmt.Sprintf("fast := count(data.mcpx.rules.%[1]s._check(input, \"\")); full := count(data.mcpx.rules.%[1]s._s0(input, \"\"))", name)
		cq, err := rego.New(rego.Query(q), rego.Module("generated.rego", src), rego.StrictBuiltinErrors(true)).PrepareForEval(context.Background())
		if err != nil {
			return nil, fmt.Errorf("prepare cross check: %w", err)
		}
		r.cross = &cq
	}
	return r, nil
}

// violations evaluates the rule on one instance (decoded with UseNumber).
func (r *rule) violations(instance any) ([]any, error) {
	v, err := ast.InterfaceToValue(instance)
	if err != nil {
		return nil, err
	}
	if r.cross != nil {
		rs, err := r.cross.Eval(context.Background(), rego.EvalParsedInput(v))
		if err != nil {
			return nil, fmt.Errorf("cross check: %w", err)
		}
		if len(rs) != 1 {
			return nil, fmt.Errorf("cross check: result %v", rs)
		}
		fast, full := rs[0].Bindings["fast"], rs[0].Bindings["full"]
		if (fmt.Sprint(fast) == "0") != (fmt.Sprint(full) == "0") {
			return nil, fmt.Errorf("_check found %v violations but the full path %v", fast, full)
		}
	}
	return r.eval(v)
}

func (r *rule) eval(v ast.Value) ([]any, error) {
	rs, err := r.pq.Eval(context.Background(), rego.EvalParsedInput(v))
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, fmt.Errorf("unexpected result set %v", rs)
	}
	m, ok := rs[0].Expressions[0].Value.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("violations is %T", rs[0].Expressions[0].Value)
	}
	vs, ok := m["case"].([]any)
	if !ok {
		return nil, fmt.Errorf("violations[case] is %T", m["case"])
	}
	return vs, nil
}

func decodeJSON(t testing.TB, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}
