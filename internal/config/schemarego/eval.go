package schemarego

import (
	"context"
	"fmt"
	"sort"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	policyrego "github.com/mcpx/mcpx-policy/rego"
)

// Evaluate decides values with generated packages exactly as the
// argument-rules step calls them (ADR 0001): modules maps each package
// name to the source Compile returned for it; targets is what the step's
// data.mcpx.steps.rules.targets would hold — for each package, values by a
// key of the caller's, each {"value": v, "path": "<JSON Pointer>"} — and
// the result is each package's violations by the same keys, an empty list
// for a valid value. All packages are compiled and evaluated together,
// once, under strict builtin errors. The loader decides rule examples with
// it (config.RuleEvaluator), so an example is judged by the very code the
// policy runs. Safe for concurrent use.
func Evaluate(modules map[string]string, targets map[string]map[string]any) (map[string]map[string][]any, error) {
	names := make([]string, 0, len(targets))
	for name := range targets {
		if !identRE.MatchString(name) {
			return nil, &Error{Keyword: "name", Msg: fmt.Sprintf("package name %q is not a Rego identifier", name)}
		}
		if _, ok := modules[name]; !ok {
			return nil, fmt.Errorf("no generated package %s", name)
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return map[string]map[string][]any{}, nil
	}
	sort.Strings(names)
	opts := []func(*rego.Rego){
		rego.Query("x = {name: data.mcpx.rules[name].violations | some name, _ in input}"),
		rego.Module("mcpx-examples/targets.rego", "package mcpx.steps.rules\n\ntargets := input\n"),
		// the policy's compile guard keeps the compile of many packages
		// linear (rego/mcpx/lib/compile_guard.rego says how)
		rego.Module(policyrego.CompileGuardFile, policyrego.CompileGuard()),
		rego.StrictBuiltinErrors(true),
		rego.SetRegoVersion(ast.RegoV1),
	}
	for _, name := range names {
		opts = append(opts, rego.Module("generated/"+name+".rego", modules[name]))
	}
	in := make(map[string]any, len(targets))
	for name, t := range targets {
		in[name] = t
	}
	rs, err := rego.New(append(opts, rego.Input(in))...).Eval(context.Background())
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("the generated packages gave no verdict")
	}
	all, ok := rs[0].Bindings["x"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the generated packages gave %T, not violations by package", rs[0].Bindings["x"])
	}
	out := make(map[string]map[string][]any, len(names))
	for _, name := range names {
		byKey, _ := all[name].(map[string]any)
		out[name] = make(map[string][]any, len(byKey))
		for key := range targets[name] {
			vs, ok := byKey[key].([]any)
			if !ok {
				return nil, fmt.Errorf("the generated package %s gave no verdict for %s", name, key)
			}
			out[name][key] = vs
		}
	}
	return out, nil
}
