package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/assemble"
	"github.com/mcpx/mcpx-policy/internal/bench"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/secretcorpus"
	"github.com/mcpx/mcpx-policy/internal/sweep"
	regofiles "github.com/mcpx/mcpx-policy/rego"
)

// harness asks every engine-only predicate of lib.predicates on the input:
// the rules as booleans, package_accepts for each of the tool's matched
// packages and accepting_packages (their set), plain_text for every string and key of the input, plain_value
// for every value of the arguments under its key, plain_args for the arguments. Evaluated on the engine
// (the predicates answered in Go) and on the same policy as stock OPA
// evaluates a bundle (the predicates in Rego).
const harness = `package mcpx_predicates_harness

import data.mcpx.lib.predicates

answers := {
	"well_formed": well_formed,
	"no_unknown_args": no_unknown_args,
	"nested_keys_known": nested_keys_known,
	"rules_accept": rules_accept,
	"common_case": common_case,
	"package_accepts": package_accepts,
	"accepting_packages": {pkg | some pkg in predicates.accepting_packages},
	"plain_text": plain_text,
	"plain_value": plain_value,
	"plain_args": plain_args,
}

well_formed := true if predicates.well_formed else := false

no_unknown_args := true if predicates.no_unknown_args else := false

nested_keys_known := true if predicates.nested_keys_known else := false

rules_accept := true if predicates.rules_accept else := false

common_case := true if predicates.common_case else := false

package_accepts := {pkg | some pkg, _ in object.get(_facts, "packages", {}); predicates.package_accepts(pkg)}

_facts := data.mcpx.lib.tool.facts(input.server, input.tool.name) if {
	is_string(input.server)
	is_string(input.tool.name)
} else := {}

plain_text := {s | some s in _strings; predicates.plain_text(s)}

_strings contains s if {
	walk(input, [_, s])
	is_string(s)
}

_strings contains k if {
	walk(input, [p, _])
	count(p) > 0
	k := p[count(p) - 1]
	is_string(k)
}

plain_value := {[k, v] | some [k, v] in _values; predicates.plain_value(k, v)}

plain_args := true if {
	is_object(input)
	predicates.plain_args(object.get(input, "args", {}))
} else := false

_values contains [_key(p), v] if {
	is_object(input)
	walk(object.get(input, "args", {}), [p, v])
}

_key(p) := p[count(p) - 1] if {
	count(p) > 0
	is_string(p[count(p) - 1])
} else := ""
`

const harnessQuery = "data.mcpx_predicates_harness.answers"

// checker evaluates the harness both ways on one policy.
type checker struct {
	eng   *engine.Prepared
	stock rego.PreparedEvalQuery
}

// newChecker prepares the harness on p, on the engine and as a stock OPA.
func newChecker(t testing.TB, p engine.Policy) *checker {
	t.Helper()
	return newCheckerOn(t, p, newStock(t, p))
}

// newCheckerOn is newChecker on p compiled as a stock OPA already (stock,
// newStock's of p).
func newCheckerOn(t testing.TB, p engine.Policy, stock *stockOPA) *checker {
	t.Helper()
	mods := map[string]string{"mcpx_predicates_harness.rego": harness}
	for n, src := range p.Modules {
		mods[n] = src
	}
	p.Modules = mods
	eng, err := engine.Prepare(context.Background(), p, engine.WithQuery(harnessQuery))
	if err != nil {
		t.Fatal(err)
	}
	return &checker{eng: eng, stock: stock.query(t, harnessQuery)}
}

// check requires every predicate the engine answers yes to hold in Rego
// too, for the input in (or, with a call, the input the engine builds for
// it, its arguments read as the caller's values). It returns how many
// yes answers the engine gave.
func (c *checker) check(t testing.TB, what string, in ast.Value, call *decision.Call, led *engine.Ledger) int {
	t.Helper()
	ctx := context.Background()
	if call != nil {
		var err error
		if in, err = engine.Input(*call, led); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	goRes, err := c.eng.Results(ctx, in, call, led)
	if err != nil || len(goRes) != 1 {
		t.Fatalf("%s: engine: %v %v", what, goRes, err)
	}
	doc, err := ast.JSON(in)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	regoRes, err := c.stock.Eval(ctx, rego.EvalInput(doc))
	if err != nil || len(regoRes) != 1 {
		t.Fatalf("%s: stock: %v %v", what, regoRes, err)
	}
	g := normal(t, goRes[0])
	r := normal(t, regoRes[0].Expressions[0].Value)
	yes := 0
	for _, name := range []string{"well_formed", "no_unknown_args", "nested_keys_known", "rules_accept", "common_case", "plain_args"} {
		if g[name] == true {
			yes++
			if r[name] != true {
				t.Errorf("%s: %s: the engine says yes, Rego says no\ninput: %s", what, name, cut(in.String()))
			}
		}
	}
	for _, name := range []string{"package_accepts", "accepting_packages", "plain_text", "plain_value"} {
		gs, rs := g[name].([]any), r[name].([]any)
		have := map[string]bool{}
		for _, x := range rs {
			have[key(x)] = true
		}
		for _, x := range gs {
			yes++
			if !have[key(x)] {
				t.Errorf("%s: %s(%s): the engine says yes, Rego says no\ninput: %s", what, name, cut(key(x)), cut(in.String()))
			}
		}
	}
	return yes
}

// normal is v as decoded JSON with sets as sorted arrays.
func normal(t testing.TB, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func key(x any) string {
	b, _ := json.Marshal(x)
	return string(b)
}

func cut(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// policyOf compiles the config at path as the SDK does.
func policyOf(t testing.TB, paths ...string) engine.Policy {
	t.Helper()
	c, err := config.Load(config.LoadOptions{Paths: paths, Env: []string{}, SchemaCompiler: schemarego.Compile})
	if err != nil {
		t.Fatal(err)
	}
	return assemble.Policy(c)
}

// policyOfYAML compiles a config written as text, as policyOf does a file.
func policyOfYAML(t testing.TB, yaml string) engine.Policy {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "mcpx-policy.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return policyOf(t, cfg)
}

// TestPredicatesImplyRegoOnWorkloads: on the M and L reference calls, with
// callers' modes, ledger entries and missing annotations mixed in, every
// engine-only predicate the engine answers yes to holds in Rego. A quick
// run checks every sweep.Stride-th call; make test-full all of them.
func TestPredicatesImplyRegoOnWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the M and L workloads")
	}
	for _, tc := range []struct {
		shape bench.Shape
		calls int
	}{{bench.M, 2000}, {bench.L, 500}} {
		t.Run(tc.shape.Name, func(t *testing.T) {
			wl := workloadOf(t, tc.shape)
			w := wl.w
			c := newCheckerOn(t, wl.pol, wl.stock)
			yes := 0
			for i := 0; i < tc.calls; i++ {
				if !sweep.Take(i) {
					continue
				}
				call, led := bench.Variant(i, w.Call(i))
				yes += c.check(t, fmt.Sprintf("%s call %d", tc.shape.Name, i), nil, &call, led)
				if t.Failed() {
					return
				}
			}
			t.Logf("%s, %d yes answers of the engine, each held in Rego", sweep.Describe(tc.calls), yes)
		})
	}
}

// TestPredicatesImplyRegoOnTheSuite: every schema of the official JSON
// Schema suite the compiler accepts becomes a rule; on every case, the
// engine's rules predicates (santhosh v6) vouch only for values the
// generated Rego accepts.
func TestPredicatesImplyRegoOnTheSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the suite")
	}
	su := suiteOf(t)
	cases := su.cases
	c := newCheckerOn(t, su.pol, su.stock)
	yes := 0
	t0 := true
	for i, sc := range cases {
		if !sweep.Take(i) {
			continue
		}
		call := decision.Call{Server: "s", Tool: decision.Tool{Name: sc.tool, Annotations: &decision.Annotations{ReadOnlyHint: &t0}}, Args: map[string]any{"v": sc.data}}
		yes += c.check(t, sc.name, nil, &call, &engine.Ledger{})
	}
	t.Logf("suite: %s, %d yes answers of the engine, each held in Rego", sweep.Describe(len(cases)), yes)
	// 1,005 of the pinned suite's 1,099 cases (schemarego's TestSuite
	// has the count per file)
	if len(cases) < 1005 {
		t.Errorf("only %d suite cases", len(cases))
	}
}

// TestPredicatesImplyRegoOnTheRegoTests runs the policy's own Rego tests
// (rego/) — once per process with the refusals' test, regoTestInputs —
// gathers every input any of them evaluates, and on each, against
// the test fixtures' config, requires every predicate the engine answers
// yes to hold in Rego. The fixtures' hand-written rule packages stand for
// the schemas named in their comments.
func TestPredicatesImplyRegoOnTheRegoTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Rego tests with tracing")
	}
	inputs, config := regoTestInputs(t)
	p := engine.Policy{Modules: regofiles.Modules(), Data: map[string]any{"config": config, "secrets": redact.SecretsData()}, Schemas: map[string]any{
		"test_workspace":   map[string]any{"properties": map[string]any{"path": map[string]any{"type": "string", "pattern": "^/workspace/"}}},
		"test_const_false": map[string]any{"const": false},
	}}
	rules, err := filepath.Glob("../../rego/mcpx/testdata/rules/*.rego")
	if err != nil || len(rules) == 0 {
		t.Fatalf("the Rego tests' rule packages: %v %v", rules, err)
	}
	for _, name := range rules {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		p.Modules[filepath.Base(name)] = string(src)
	}
	c := newChecker(t, p)
	yes := 0
	for _, in := range inputs {
		yes += c.check(t, "rego test input", in, nil, nil)
	}
	t.Logf("%d distinct inputs of the Rego tests, %d yes answers of the engine, each held in Rego", len(inputs), yes)
	if len(inputs) < 100 {
		t.Errorf("only %d inputs gathered from the Rego tests", len(inputs))
	}
}

// inputRecorder is a query tracer that keeps every distinct input the
// traced evaluations see (a test's "with input as …"), without plugging
// local variables into events or keeping the events: the cost of a full
// trace of every Rego test is most of what this test would cost. Safe for
// the runner's parallel tests.
type inputRecorder struct {
	mu     sync.Mutex
	seen   map[*ast.Term]bool
	inputs map[string]ast.Value
}

func (r *inputRecorder) Enabled() bool { return true }

func (r *inputRecorder) Config() topdown.TraceConfig { return topdown.TraceConfig{} }

func (r *inputRecorder) TraceEvent(ev topdown.Event) {
	in := ev.Input()
	if in == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[in] {
		return
	}
	r.seen[in] = true
	k := in.String()
	if _, ok := r.inputs[k]; !ok {
		r.inputs[k] = in.Value
	}
}

// fuzzConfig has rules over the keywords whose Go and Rego readings could
// part (numbers, patterns, uniqueness, nested objects, combinators), every
// unknown-arguments mode, exempt keys, hidden and write patterns.
const fuzzConfig = `version: 1
policy:
  write: ask
  confirmDestructive: true
  unknownArgs: reject
  exemptArgs: ["cursor"]
pool:
  hiddenTools: ["admin_*"]
  argumentRules:
    - id: path
      tools: ["*"]
      schema: {"properties": {"path": {"type": "string", "pattern": "^/(workspace|tmp)/", "maxLength": 64}}}
    - id: n
      tools: ["*"]
      argument: n
      schema: {"type": "number", "multipleOf": 0.01, "exclusiveMinimum": -1e3, "maximum": 9007199254740992}
    - id: tags
      tools: ["*"]
      argument: tags
      schema: {"type": "array", "uniqueItems": true, "maxItems": 6, "items": {"type": ["string", "number"], "minLength": 1}}
    - id: opt
      tools: ["*"]
      argument: /o/x
      schema: {"enum": [1, "1", true, null, {"a": [1.0]}]}
    - id: obj
      tools: ["*"]
      argument: o
      schema: {"type": "object", "properties": {"x": {}, "y": {"type": "integer"}}, "additionalProperties": false, "minProperties": 1, "propertyNames": {"pattern": "^[a-z]+$"}}
    - id: combo
      tools: ["combo"]
      schema: {"oneOf": [{"required": ["a"]}, {"required": ["b"]}], "not": {"required": ["c"]}, "if": {"properties": {"a": {"const": 0}}}, "then": {"required": ["d"]}}
    - id: need
      tools: ["need"]
      argument: k
      required: true
      schema: {"type": "string", "minLength": 2}
servers:
  s:
    unknownArgsTools: [{tools: ["loose"], mode: "off"}, {tools: ["warned"], mode: "warn"}]
    writeTools: ["/^w/"]
`

// TestPredicatesImplyRegoOnTheSecretCorpus: every secret of the corpus
// (in a secret-named key, a name/value object, [K, V] pairs, an argument
// vector, KEY=VALUE text, YAML, INI and .env blocks, JSON text, command
// lines) and random nestings of it, as a call's arguments: plain_text and
// plain_value say yes only where the policy echoes the value unchanged.
func TestPredicatesImplyRegoOnTheSecretCorpus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "fuzz.yaml")
	if err := os.WriteFile(cfg, []byte(fuzzConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newChecker(t, policyOf(t, cfg))
	cases := append(secretcorpus.Cases(), secretcorpus.Shapes("pw")...)
	cases = append(cases, secretcorpus.Shapes("hunter2")...)
	rng := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 200; i++ {
		cases = append(cases, secretcorpus.Nest(rng, cases[rng.IntN(len(cases))], 1+rng.IntN(4)))
	}
	for i, sc := range cases {
		call := decision.Call{Server: "s", Tool: fuzzTools[i%len(fuzzTools)], Args: sc.Args}
		c.check(t, sc.Name, nil, &call, &engine.Ledger{})
		if t.Failed() {
			return
		}
	}
}

// fuzzTools are the tools a fuzzed call names: no schema, a plain closed
// one with nested properties, an open one, one with patternProperties and
// a $ref, and the names the rules and patterns single out.
var fuzzTools = []decision.Tool{
	{Name: "plain"},
	{Name: "closed", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"path": map[string]any{"type": "string"}, "n": map[string]any{}, "tags": map[string]any{"type": "array"},
		"o":    map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{}, "y": map[string]any{}}},
		"m":    map[string]any{"type": "object", "additionalProperties": true},
		"deep": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{"z": map[string]any{}}}},
	}}},
	{Name: "loose", InputSchema: map[string]any{"properties": map[string]any{"a": map[string]any{}}, "additionalProperties": true}},
	{Name: "warned", InputSchema: map[string]any{"properties": map[string]any{"a": map[string]any{}}, "patternProperties": map[string]any{"^x": map[string]any{}}}},
	{Name: "combo", InputSchema: map[string]any{"$ref": "#/$defs/x", "$defs": map[string]any{"x": map[string]any{"properties": map[string]any{"a": map[string]any{}}}}}},
	{Name: "need", InputSchema: map[string]any{"properties": map[string]any{"k": map[string]any{}, "token": map[string]any{}}}},
	{Name: "wfile"},
	{Name: "admin_x"},
}

// FuzzPredicates: for fuzzed arguments on the tools above (with fuzzed
// annotations and caller modes), and for fuzzed whole input documents,
// every predicate the engine answers yes to holds in Rego. Run it long at
// the end of a change: go test -run '^$' -fuzz FuzzPredicates -fuzztime 10m -parallel 1 ./internal/engine/
func FuzzPredicates(f *testing.F) {
	for _, seed := range []string{
		`{"path": "/workspace/a", "n": 1.25, "tags": ["a", 1, "b"], "o": {"x": 1, "y": 2}}`,
		`{"path": "/etc/x", "n": 0.005, "tags": ["a", "a"], "o": {"x": {"a": [1]}}}`,
		`{"n": 9007199254740993, "tags": [1, 1.0], "o": {"X": 1}, "cursor": "c"}`,
		`{"a": 0, "d": 1, "m": {"q": {"r": 1}}, "deep": [{"z": 1, "w": 2}]}`,
		`{"k": "x", "token": "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "path": "/tmp/Bearer abcdefgh12345"}`,
		`{"server": "s", "tool": {"name": "closed", "inputSchema": {"properties": {"a": {}}}}, "args": {"a": 1, "b": 2}, "mode": "allow"}`,
		`{"server": "s", "tool": {"name": "plain", "annotations": {"readOnlyHint": "yes"}}, "args": {}}`,
		`{"server": 7, "tool": {"name": "plain"}, "args": {"n": 1e400}}`,
		`{"env": [{"name": "DB_PASSWORD", "value": "pw"}], "headers": [["X-Api-Key", "k"]], "argv": ["--password", "p"]}`,
		`{"command": "mysql", "args": ["-u", "root", "-ppw"], "body": "{\"key\": \"api_key\", \"val\": \"v\"}"}`,
	} {
		f.Add([]byte(seed), uint8(1), uint8(0))
	}
	dir := f.TempDir()
	cfg := filepath.Join(dir, "fuzz.yaml")
	if err := os.WriteFile(cfg, []byte(fuzzConfig), 0o644); err != nil {
		f.Fatal(err)
	}
	c := newChecker(f, policyOf(f, cfg))
	f.Fuzz(func(t *testing.T, raw []byte, toolSel, flags uint8) {
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return
		}
		// the whole document as an input, as a stock OPA would get it
		if in, err := ast.InterfaceToValue(v); err == nil {
			c.check(t, "fuzzed input", in, nil, nil)
		}
		args, ok := v.(map[string]any)
		if !ok {
			args = map[string]any{"v": v}
		}
		tool := fuzzTools[int(toolSel)%len(fuzzTools)]
		yes, no := true, false
		switch flags % 4 {
		case 1:
			tool.Annotations = &decision.Annotations{ReadOnlyHint: &yes}
		case 2:
			tool.Annotations = &decision.Annotations{ReadOnlyHint: &no, DestructiveHint: &no}
		}
		call := decision.Call{Server: "s", Tool: tool, Args: args, Mode: []string{"", "ask", "allow", "deny"}[flags/4%4]}
		if _, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args); err != nil {
			return // no canonical form: the engine denies before asking
		}
		c.check(t, "fuzzed call", nil, &call, &engine.Ledger{})
		in, err := engine.Input(call, &engine.Ledger{})
		if err != nil {
			t.Fatal(err)
		}
		c.check(t, "fuzzed call as AST", in, nil, nil)
	})
}
