package schemarego

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Evaluator prepares a module Compile returned (package
// mcpx.rules.<name>) for deciding values exactly as the argument-rules
// step calls it: the value becomes the module's one target in
// data.mcpx.steps.rules.targets[name], with the JSON Pointer it sits at,
// and the module's violations for it are read back, under strict builtin
// errors. The function it returns gives those violations, none when the
// value is valid; it is safe for concurrent use. The loader decides rule
// examples with it (bundle.RuleEvaluator), so an example is judged by the
// very code the policy runs.
func Evaluator(module, name string) (func(value any, pointer string) ([]map[string]any, error), error) {
	if !identRE.MatchString(name) {
		return nil, &Error{Keyword: "name", Msg: fmt.Sprintf("package name %q is not a Rego identifier", name)}
	}
	harness := fmt.Sprintf("package mcpx.steps.rules\n\ntargets := {%q: {\"example\": input}}\n", name)
	pq, err := rego.New(
		rego.Query("data.mcpx.rules."+name+".violations.example"),
		rego.Module("generated/"+name+".rego", module),
		rego.Module("mcpx-example-harness.rego", harness),
		rego.StrictBuiltinErrors(true),
		rego.SetRegoVersion(ast.RegoV1),
	).PrepareForEval(context.Background())
	if err != nil {
		return nil, fmt.Errorf("prepare the generated package %s: %w", name, err)
	}
	return func(value any, pointer string) ([]map[string]any, error) {
		rs, err := pq.Eval(context.Background(), rego.EvalInput(map[string]any{"value": value, "path": pointer}))
		if err != nil {
			return nil, err
		}
		if len(rs) != 1 || len(rs[0].Expressions) != 1 {
			return nil, fmt.Errorf("the generated package %s gave no verdict", name)
		}
		list, ok := rs[0].Expressions[0].Value.([]any)
		if !ok {
			return nil, fmt.Errorf("the generated package %s gave %T, not a list of violations", name, rs[0].Expressions[0].Value)
		}
		out := make([]map[string]any, 0, len(list))
		for _, v := range list {
			m, ok := v.(map[string]any)
			if !ok {
				m = map[string]any{"constraint": "unknown", "expected": v}
			}
			out = append(out, m)
		}
		return out, nil
	}, nil
}
