package bench

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown/cache"
)

// matchSchemaPolicy is the workload's config written the way a Rego user
// would without mcpx-policy: rules kept as data with their JSON Schemas and
// checked with the json.match_schema builtin (draft-07: the 2020-12
// keywords prefixItems, dependentRequired, minContains and maxContains are
// ignored, so it does less work than the real rules ask for), tool patterns
// matched by scanning the server's rules with glob.match and regex.match,
// and the same hidden, unknown-arguments and write-mode steps.
const matchSchemaPolicy = `package user

default hidden := false

hidden if {
	some p in array.concat(data.user.pool.hidden, object.get(data.user.servers, [input.server, "hidden"], []))
	_match(p, input.tool.name)
}

_match(p, name) if {
	startswith(p, "/")
	endswith(p, "/")
	regex.match(trim(p, "/"), name)
}

_match(p, name) if {
	not startswith(p, "/")
	glob.match(p, [], name)
}

_rules contains r if {
	some r in data.user.pool.rules
	some p in r.tools
	_match(p, input.tool.name)
}

_rules contains r if {
	some r in object.get(data.user.servers, [input.server, "rules"], [])
	some p in r.tools
	_match(p, input.tool.name)
}

violations contains {"rule": r.id, "description": r.description, "errors": errs} if {
	some r in _rules
	value := object.get(input.args, r.path, null)
	object.get(input.args, r.path, 0) == object.get(input.args, r.path, 1)
	[ok, errs] := json.match_schema(value, r.schema)
	not ok
}

default write := false

write if input.tool.annotations.readOnlyHint != true

write if {
	some p in object.get(data.user.servers, [input.server, "writeTools"], [])
	_match(p, input.tool.name)
}

unknown contains k if {
	some k, _ in input.args
	not input.tool.inputSchema.properties[k]
	not k in data.user.exempt
}

ua_mode := object.get(data.user.servers, [input.server, "unknownArgs"], "warn")

write_mode := object.get(data.user.servers, [input.server, "write"], "ask")

deny contains {"step": "unknown_args", "code": "UnknownArguments", "keys": unknown} if {
	ua_mode == "reject"
	count(unknown) > 0
}

deny contains {"step": "argument_rules", "code": "ArgumentRuleViolation", "violations": violations} if count(violations) > 0

deny contains {"step": "write_mode", "code": "WriteDenied"} if {
	write
	write_mode == "deny"
}

ask contains {"step": "write_mode", "code": "WriteNeedsConfirmation"} if {
	write
	write_mode == "ask"
}

ask contains {"step": "destructive_floor", "code": "DestructiveNeedsConfirmation"} if {
	write
	input.tool.annotations.destructiveHint != false
	write_mode != "deny"
}

_order := {"unknown_args": 1, "argument_rules": 2, "write_mode": 3, "destructive_floor": 4}

decision := {"outcome": "deny", "step": "hidden"} if hidden

_first(findings) := sort([[_order[f.step], f.step] | some f in findings])[0][1]

decision := {"outcome": "deny", "step": _first(deny), "reasons": deny} if {
	not hidden
	count(deny) > 0
}

decision := {"outcome": "ask", "step": _first(ask), "reasons": ask} if {
	not hidden
	count(deny) == 0
	count(ask) > 0
}

decision := {"outcome": "allow", "step": ""} if {
	not hidden
	count(deny) == 0
	count(ask) == 0
}
`

// MatchSchema is the prepared json.match_schema policy for a workload. It
// gets OPA's inter-query value cache, as `opa run --server` has by default,
// so json.match_schema compiles each schema once, not on every call.
type MatchSchema struct {
	query rego.PreparedEvalQuery
	cache cache.InterQueryValueCache
}

// NewMatchSchema prepares the json.match_schema policy with w's config as
// data.user.
func NewMatchSchema(ctx context.Context, w *Workload) (*MatchSchema, error) {
	return newMatchSchema(ctx, w, "data.user.decision")
}

// NewMatchSchemaRules prepares only the argument-rule part of the
// json.match_schema policy (data.user.violations), to compare with the
// engine's argument-rules step alone.
func NewMatchSchemaRules(ctx context.Context, w *Workload) (*MatchSchema, error) {
	return newMatchSchema(ctx, w, "data.user.violations")
}

func newMatchSchema(ctx context.Context, w *Workload, query string) (*MatchSchema, error) {
	rule := func(r Rule) map[string]any {
		path := []any{}
		if r.Argument != "" {
			for _, k := range splitPointer(r.Argument) {
				path = append(path, k)
			}
		}
		return map[string]any{"id": r.ID, "description": r.Description, "tools": r.Tools, "path": path, "schema": r.Schema}
	}
	pool := map[string]any{"hidden": []any{"admin_*"}, "rules": []any{}}
	for _, r := range w.RulesOf("") {
		pool["rules"] = append(pool["rules"].([]any), rule(r))
	}
	servers := map[string]any{}
	byServer := map[string][]any{}
	for _, r := range w.Rules {
		if r.Server != "" {
			byServer[r.Server] = append(byServer[r.Server], rule(r))
		}
	}
	for _, s := range w.Servers {
		servers[s.Name] = map[string]any{"write": s.Write, "unknownArgs": s.UnknownArgs, "hidden": s.Hidden,
			"writeTools": s.WriteTools, "rules": byServer[s.Name]}
	}
	raw, err := json.Marshal(map[string]any{"user": map[string]any{"pool": pool, "servers": servers, "exempt": w.Exempt}})
	if err != nil {
		return nil, err
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, err
	}
	pq, err := rego.New(
		rego.Query(query),
		rego.Module("user.rego", matchSchemaPolicy),
		rego.Store(inmem.NewFromObject(data)),
		rego.SetRegoVersion(ast.RegoV1),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, err
	}
	entries := 4096
	return &MatchSchema{query: pq, cache: cache.NewInterQueryValueCache(ctx, &cache.Config{
		InterQueryBuiltinValueCache: cache.InterQueryBuiltinValueCacheConfig{MaxNumEntries: &entries},
	})}, nil
}

// Evaluate evaluates the prepared query and returns the number of results.
func (m *MatchSchema) Evaluate(ctx context.Context, input ast.Value) (int, error) {
	rs, err := m.query.Eval(ctx, rego.EvalParsedInput(input), rego.EvalInterQueryBuiltinValueCache(m.cache))
	return len(rs), err
}

// Decide evaluates the policy on the engine's own input document and
// returns the outcome and the deciding step.
func (m *MatchSchema) Decide(ctx context.Context, input ast.Value) (outcome, step string, err error) {
	rs, err := m.query.Eval(ctx, rego.EvalParsedInput(input), rego.EvalInterQueryBuiltinValueCache(m.cache))
	if err != nil {
		return "", "", err
	}
	if len(rs) != 1 {
		return "", "", fmt.Errorf("json.match_schema policy: %d results", len(rs))
	}
	d, ok := rs[0].Expressions[0].Value.(map[string]any)
	if !ok {
		return "", "", fmt.Errorf("json.match_schema policy: decision is %T", rs[0].Expressions[0].Value)
	}
	o, _ := d["outcome"].(string)
	s, _ := d["step"].(string)
	return o, s, nil
}

func splitPointer(arg string) []string {
	if arg == "" {
		return nil
	}
	if arg[0] != '/' {
		return []string{arg}
	}
	var out []string
	start := 1
	for i := 1; i <= len(arg); i++ {
		if i == len(arg) || arg[i] == '/' {
			out = append(out, arg[start:i])
			start = i + 1
		}
	}
	return out
}
