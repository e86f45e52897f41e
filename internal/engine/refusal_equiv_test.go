package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/bench"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/sweep"
	regofiles "github.com/mcpx/mcpx-policy/rego"
)

// The engine-only refusal details (internal/engine/refusal.go): a planned
// call's decision built in Go must be the Rego's, byte for byte. Each test
// decides calls on the engine (DecideBuilt says which decisions it built
// in Go) and on the same policy as a stock OPA evaluates it (every
// predicate and every reason in Rego), and compares the two decisions'
// JSON.

// decider decides calls both ways on one policy and counts the decisions
// built in Go.
type decider struct {
	eng          *engine.Prepared
	stock        rego.PreparedEvalQuery
	built, total int
	classes      map[string]int // built decisions by outcome and step
	all          map[string]int // every decision by outcome and step
}

func newDecider(t testing.TB, p engine.Policy) *decider {
	t.Helper()
	return newDeciderOn(t, p, newStock(t, p))
}

// newDeciderOn is newDecider on p compiled as a stock OPA already (stock,
// newStock's of p).
func newDeciderOn(t testing.TB, p engine.Policy, stock *stockOPA) *decider {
	t.Helper()
	eng, err := engine.Prepare(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return &decider{eng: eng, stock: stock.query(t, "data.mcpx.decision"), classes: map[string]int{}, all: map[string]int{}}
}

// check decides call both ways and fails t when the decisions differ; it
// returns the engine's decision and whether the engine built it in Go.
func (c *decider) check(t testing.TB, what string, call decision.Call, led *engine.Ledger) (decision.Decision, bool) {
	t.Helper()
	ctx := context.Background()
	got, built, err := c.eng.DecideBuilt(ctx, call, led)
	if err != nil {
		return got, false // not a decision the policy made (no canonical form): compared elsewhere
	}
	c.total++
	c.all[string(got.Outcome)+":"+string(got.Step)]++
	if built {
		c.built++
		c.classes[string(got.Outcome)+":"+string(got.Step)]++
	}
	c.compare(t, what, built, got, call, led)
	return got, built
}

// compare fails t when got is not the decision a stock OPA makes on call.
func (c *decider) compare(t testing.TB, what string, built bool, got decision.Decision, call decision.Call, led *engine.Ledger) {
	t.Helper()
	ctx := context.Background()
	raw, err := engine.InputJSON(call, led)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	rs, err := c.stock.Eval(ctx, rego.EvalInput(doc))
	if err != nil || len(rs) != 1 {
		t.Fatalf("%s: stock: %v %v", what, rs, err)
	}
	want, err := engine.FromValue(rs[0].Expressions[0].Value)
	if err != nil {
		t.Fatalf("%s: stock decision: %v", what, err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("%s (built in Go: %v): the engine's decision is not the Rego's\ninput %s\nengine %s\nrego   %s", what, built, cut(string(raw)), g, w)
	}
}

func (c *decider) report(t testing.TB) {
	t.Helper()
	var classes []string
	for k, n := range c.classes {
		classes = append(classes, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(classes)
	var all []string
	for k, n := range c.all {
		all = append(all, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(all)
	t.Logf("%d decisions equal (%s), %d of them built in Go (%s)", c.total, strings.Join(all, ", "), c.built, strings.Join(classes, ", "))
}

// TestRefusalsInGoOnWorkloads: on the M and L reference calls (with
// callers' modes, ledger entries and missing annotations), and on M with
// its servers in shadow mode, every decision is the Rego's byte for byte;
// the argument-rule and unknown-argument refusals are built in Go. A
// quick run decides every sweep.Stride-th call; make test-full all.
func TestRefusalsInGoOnWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the M and L workloads")
	}
	for _, tc := range []struct {
		shape  bench.Shape
		calls  int
		shadow bool
	}{{bench.M, 2000, false}, {bench.L, 500, false}, {bench.M, 500, true}} {
		name := tc.shape.Name
		if tc.shadow {
			name += "+shadow"
		}
		t.Run(name, func(t *testing.T) {
			wl := workloadOf(t, tc.shape)
			w := wl.w
			var c *decider
			if tc.shadow {
				// the same modules on other data: the workload's compile
				// as a stock OPA, with the shadow layer's data
				shadow := filepath.Join(t.TempDir(), "shadow.yaml")
				if err := os.WriteFile(shadow, []byte("version: 1\npolicy:\n  enforce: shadow\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				p := policyOf(t, append(slices.Clone(wl.paths), shadow)...)
				c = newDeciderOn(t, p, wl.stock.withData(t, p))
			} else {
				c = newDeciderOn(t, wl.pol, wl.stock)
			}
			for i := 0; i < tc.calls; i++ {
				if !sweep.Take(i) {
					continue
				}
				call, led := bench.Variant(i, w.Call(i))
				c.check(t, fmt.Sprintf("%s call %d", name, i), call, led)
				if t.Failed() {
					return
				}
			}
			t.Log(sweep.Describe(tc.calls))
			c.report(t)
			if c.built < sweep.Count(tc.calls)/20 {
				t.Errorf("only %d of %d decisions built in Go", c.built, c.total)
			}
		})
	}
}

// TestRefusalsInGoOnTheSuite: every schema of the JSON Schema suite the
// compiler accepts is a rule; every case is a call, most of the invalid
// ones argument-rule refusals built in Go: each decision is the Rego's.
func TestRefusalsInGoOnTheSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the suite")
	}
	su := suiteOf(t)
	cases := su.cases
	c := newDeciderOn(t, su.pol, su.stock)
	yes := true
	for i, sc := range cases {
		if !sweep.Take(i) {
			continue
		}
		call := decision.Call{Server: "s", Tool: decision.Tool{Name: sc.tool, Annotations: &decision.Annotations{ReadOnlyHint: &yes}}, Args: map[string]any{"v": sc.data}}
		c.check(t, sc.name, call, &engine.Ledger{})
	}
	t.Log("suite: " + sweep.Describe(len(cases)))
	c.report(t)
	// the rest fall back: unevaluated*, values the secret table would
	// redact, schemas the Explainer does not cover
	if c.built*4 < c.all["deny:argument_rules"]*3 {
		t.Errorf("only %d of %d suite refusals built in Go", c.built, c.all["deny:argument_rules"])
	}
}

// TestRefusalsInGoOnTheRegoTests: every call the policy's own Rego tests
// evaluate (their inputs read back as calls), against the fixtures'
// config with the fixtures' rule packages generated from their schemas,
// is decided as the Rego decides it.
func TestRefusalsInGoOnTheRegoTests(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Rego tests with tracing")
	}
	inputs, fixtures := regoTestInputs(t)
	schemas := map[string]any{
		"test_workspace":   map[string]any{"properties": map[string]any{"path": map[string]any{"type": "string", "pattern": "^/workspace/"}}},
		"test_const_false": map[string]any{"const": false},
	}
	data := map[string]any{"config": fixtures, "secrets": redact.SecretsData(), "codes": decision.CodesData(), "vocab": config.VocabData()}
	p := engine.Policy{Modules: regofiles.Modules(), Data: data, Schemas: schemas}
	for pkg, schema := range schemas {
		src, err := schemarego.Compile(schema, pkg)
		if err != nil {
			t.Fatal(err)
		}
		p.Modules["rules/"+pkg+".rego"] = src
	}
	c := newDecider(t, p)
	calls := 0
	for _, in := range inputs {
		call, led, ok := callOf(in)
		if !ok {
			continue
		}
		calls++
		c.check(t, "rego test input", call, led)
	}
	c.report(t)
	if calls < 100 || c.built < 5 {
		t.Errorf("%d calls from the Rego tests' inputs, %d built in Go", calls, c.built)
	}
}

var (
	regoInputsOnce   sync.Once
	regoInputs       []ast.Value
	regoInputsConfig any
	regoInputsErr    error
)

// regoTestInputs runs the policy's Rego tests once per process, recording
// every input they evaluate (inputRecorder), and returns the inputs in a
// stable order and the fixtures' config.
func regoTestInputs(t testing.TB) ([]ast.Value, any) {
	t.Helper()
	regoInputsOnce.Do(func() {
		ctx := context.Background()
		mods, store, err := tester.Load([]string{"../../rego"}, nil)
		if err != nil {
			regoInputsErr = err
			return
		}
		rec := &inputRecorder{seen: map[*ast.Term]bool{}, inputs: map[string]ast.Value{}}
		ch, err := tester.NewRunner().SetStore(store).SetCoverageQueryTracer(rec).SetTimeout(10*time.Minute).Run(ctx, mods)
		if err != nil {
			regoInputsErr = err
			return
		}
		for r := range ch {
			if r.Fail || r.Error != nil {
				regoInputsErr = fmt.Errorf("rego test %s.%s: fail %v, error %v", r.Package, r.Name, r.Fail, r.Error)
			}
		}
		keys := make([]string, 0, len(rec.inputs))
		for k := range rec.inputs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			regoInputs = append(regoInputs, rec.inputs[k])
		}
		opts := []func(*rego.Rego){rego.Query("data.mcpx.testdata.config"), rego.SetRegoVersion(ast.RegoV1)}
		for _, m := range mods {
			opts = append(opts, rego.ParsedModule(m))
		}
		rs, err := rego.New(opts...).Eval(ctx)
		if err != nil || len(rs) != 1 {
			regoInputsErr = fmt.Errorf("fixture config: %v %v", rs, err)
			return
		}
		regoInputsConfig = rs[0].Expressions[0].Value
	})
	if regoInputsErr != nil {
		t.Fatal(regoInputsErr)
	}
	return regoInputs, regoInputsConfig
}

// callOf reads an input document back as the call (and ledger) the engine
// would build it from: false when it has another shape.
func callOf(in ast.Value) (decision.Call, *engine.Ledger, bool) {
	doc, err := ast.JSON(in)
	if err != nil {
		return decision.Call{}, nil, false
	}
	raw, _ := json.Marshal(doc)
	var x struct {
		Server *string `json:"server"`
		Tool   *struct {
			Name        *string               `json:"name"`
			Annotations *decision.Annotations `json:"annotations"`
			InputSchema map[string]any        `json:"inputSchema"`
			Pin         *engine.Pin           `json:"pin"`
		} `json:"tool"`
		Args   map[string]any `json:"args"`
		Mode   string         `json:"mode"`
		Ledger *struct {
			Entries []decision.LedgerEntry `json:"entries"`
			Total   int                    `json:"total"`
		} `json:"ledger"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&x) != nil || x.Server == nil || x.Tool == nil || x.Tool.Name == nil || x.Args == nil {
		return decision.Call{}, nil, false
	}
	call := decision.Call{Server: *x.Server, Tool: decision.Tool{Name: *x.Tool.Name, Annotations: x.Tool.Annotations, InputSchema: x.Tool.InputSchema}, Args: x.Args, Mode: x.Mode}
	led := &engine.Ledger{Pin: x.Tool.Pin}
	if x.Ledger != nil {
		led.Entries, led.Total = x.Ledger.Entries, x.Ledger.Total
	}
	return call, led, true
}

// refusalConfig has rules over every keyword the Go violations cover, with
// values an agent may send that are secret-shaped, long or nested, each
// unknown-arguments mode and a server in shadow mode.
const refusalConfig = `version: 1
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
      description: paths stay in the workspace
      schema: {"properties": {"path": {"type": "string", "pattern": "^/(workspace|tmp)/", "maxLength": 64}}}
    - id: n
      tools: ["*"]
      argument: n
      schema: {"type": "number", "multipleOf": 0.01, "exclusiveMinimum": -1e3, "maximum": 9007199254740992}
    - id: tags
      tools: ["*"]
      argument: tags
      schema: {"type": "array", "uniqueItems": true, "maxItems": 6, "items": {"type": ["string", "number"], "minLength": 1}, "contains": {"const": "ok"}, "maxContains": 2}
    - id: opt
      tools: ["*"]
      argument: /o/x
      schema: {"enum": [1, "1", true, null, {"a": [1.0]}]}
    - id: obj
      tools: ["*"]
      argument: o
      schema: {"type": "object", "properties": {"x": {}, "y": {"type": "integer"}}, "additionalProperties": false, "minProperties": 1, "propertyNames": {"pattern": "^[a-z]+$"}, "dependentRequired": {"y": ["x"]}}
    - id: combo
      tools: ["combo"]
      schema: {"oneOf": [{"required": ["a"]}, {"required": ["b"]}], "not": {"required": ["c"]}, "if": {"properties": {"a": {"const": 0}}}, "then": {"required": ["d"]}, "anyOf": [{"minProperties": 2}, {"required": ["e"]}]}
    - id: need
      tools: ["need"]
      argument: k
      required: true
      schema: {"type": "string", "minLength": 2}
    - id: where
      tools: ["wfile", "closed"]
      argument: file
      schema: {"pathWithin": ["/workspace"]}
    - id: url
      tools: ["closed"]
      argument: url
      schema: {"urlWithin": {"hosts": ["example.com"]}}
servers:
  s:
    unknownArgsTools: [{tools: ["loose"], mode: "off"}, {tools: ["warned", "need"], mode: "warn"}]
    writeTools: ["/^w/"]
  shadowed:
    enforce: shadow
`

// FuzzRefusals: for fuzzed arguments on tools with every kind of
// inputSchema and the rules above (with fuzzed annotations, caller modes
// and servers), the engine's decision is the Rego's byte for byte. Run it
// long at the end of a change:
//
//	go test -run '^$' -fuzz FuzzRefusals -fuzztime 10m -parallel 1 ./internal/engine/
func FuzzRefusals(f *testing.F) {
	for _, seed := range []string{
		`{"path": "/workspace/a", "n": 1.25, "tags": ["a", 1, "ok"], "o": {"x": 1, "y": 2}}`,
		`{"path": "/etc/x", "n": 0.005, "tags": ["a", "a"], "o": {"x": {"a": [1]}}}`,
		`{"n": 9007199254740993, "tags": [1, 1.0], "o": {"X": 1}, "cursor": "c", "pth": 1}`,
		`{"a": 0, "d": 1, "m": {"q": {"r": 1}}, "deep": [{"z": 1, "w": 2}], "c": 1}`,
		`{"k": "x", "token": "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "path": "/tmp/Bearer abcdefgh12345"}`,
		`{"file": "/workspace/../etc/passwd", "url": "https://evil.com/x", "path": "` + strings.Repeat("/workspace/x", 20) + `"}`,
		`{"patth": 1, "tagz": 2, "ooo": 3, "nn": 4, "x1": 5, "x2": 6, "x3": 7}`,
	} {
		f.Add([]byte(seed), uint8(1), uint8(0))
	}
	dir := f.TempDir()
	cfg := filepath.Join(dir, "fuzz.yaml")
	if err := os.WriteFile(cfg, []byte(refusalConfig), 0o600); err != nil {
		f.Fatal(err)
	}
	c := newDecider(f, policyOf(f, cfg))
	f.Fuzz(func(t *testing.T, raw []byte, toolSel, flags uint8) {
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return
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
		server := "s"
		if flags&0x40 != 0 {
			server = "shadowed"
		}
		call := decision.Call{Server: server, Tool: tool, Args: args, Mode: []string{"", "ask", "allow", "deny"}[flags/4%4]}
		c.check(t, "fuzzed call", call, &engine.Ledger{})
	})
}

// TestRefusalsInGoOnFuzzSeeds runs FuzzRefusals' kind of calls on a fixed
// sample (go test covers it) and reports how many were built in Go.
func TestRefusalsInGoOnFuzzSeeds(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "fuzz.yaml")
	if err := os.WriteFile(cfg, []byte(refusalConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newDecider(t, policyOf(t, cfg))
	values := []any{
		"/workspace/a", "/etc/x", "", "x", 1, 2.5, 0.005, -1000, true, nil, []any{"a", "a"}, []any{"ok", 1},
		map[string]any{"x": 1}, map[string]any{"X": 1, "y": 1.5}, "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		strings.Repeat("long ", 40), "/workspace/../etc", "https://example.com/a", "https://evil.com/",
	}
	keys := []string{"path", "n", "tags", "o", "k", "file", "url", "a", "b", "c", "d", "e", "pth", "tgas", "cursor", "token"}
	for i := 0; i < 2000; i++ {
		if !sweep.Take(i) { // 8 tools, 16 keys, 19 values, 4 modes: 7 is prime to each
			continue
		}
		args := map[string]any{}
		for j := 0; j < 1+i%4; j++ {
			args[keys[(i*7+j*5)%len(keys)]] = values[(i*11+j*3)%len(values)]
		}
		tool := fuzzTools[i%len(fuzzTools)]
		server := "s"
		if i%10 == 3 {
			server = "shadowed"
		}
		call := decision.Call{Server: server, Tool: tool, Args: args, Mode: []string{"", "ask", "allow", "deny"}[i/7%4]}
		c.check(t, fmt.Sprintf("call %d", i), call, &engine.Ledger{})
		if t.Failed() {
			return
		}
	}
	t.Log(sweep.Describe(2000))
	c.report(t)
	if c.built < sweep.Count(2000)/10 {
		t.Errorf("only %d decisions built in Go", c.built)
	}
}

// TestRefusalFallsBackToTheRego: when the Go violations of a value differ
// from santhosh's verdict on it, the engine does not build the refusal:
// the Rego's uncommon half decides, and the decision is the Rego's. The
// test makes the Explainer find nothing in an invalid value; built in Go
// regardless, the call would be allowed.
func TestRefusalFallsBackToTheRego(t *testing.T) {
	c := newDecider(t, policyOfYAML(t, refusalConfig))
	yes := true
	call := func(n float64) decision.Call {
		return decision.Call{Server: "s", Tool: decision.Tool{Name: "plain", Annotations: &decision.Annotations{ReadOnlyHint: &yes}}, Args: map[string]any{"n": n}}
	}
	d, built := c.check(t, "a refusal built in Go", call(0.005), &engine.Ledger{})
	if !built || d.Outcome != decision.Deny || d.Step != decision.StepArgumentRules {
		t.Fatalf("the refusal of n 0.005: built in Go %v, %s at %s; want a deny at argument_rules built in Go", built, d.Outcome, d.Step)
	}
	c.eng.ExplainWith(func(*schemarego.Explainer, ast.Value, string) []schemarego.Violation { return nil })
	d, built = c.check(t, "a refusal whose Go violations differ", call(0.007), &engine.Ledger{})
	if built {
		t.Errorf("the engine built a refusal whose Go violations differ from santhosh's verdict")
	}
	if d.Outcome != decision.Deny || d.Step != decision.StepArgumentRules || len(d.Reasons) != 1 || len(d.Reasons[0].Violations) != 1 || d.Reasons[0].Violations[0].Constraint != "multipleOf" {
		t.Errorf("the decision is not the Rego's refusal: %+v", d)
	}
}

// TestRefusalFindingsKeptPerScalar: the refusal of a repeated scalar value
// (a number a rule refuses, sent again with other arguments) is built
// from the finding kept the first time — the Explainer walks the value
// once — and each decision is still the Rego's byte for byte, with
// violations of its own (changing one decision's does not change
// another's).
func TestRefusalFindingsKeptPerScalar(t *testing.T) {
	c := newDecider(t, policyOfYAML(t, refusalConfig))
	walks := 0
	c.eng.ExplainWith(func(x *schemarego.Explainer, v ast.Value, pointer string) []schemarego.Violation {
		if pointer == "/n" {
			walks++
		}
		return x.Violations(v, pointer)
	})
	yes := true
	var ds []decision.Decision
	for i := range 3 {
		call := decision.Call{Server: "s", Tool: decision.Tool{Name: "plain", Annotations: &decision.Annotations{ReadOnlyHint: &yes}},
			Args: map[string]any{"n": 0.005, "path": fmt.Sprintf("/workspace/f%d", i)}}
		d, built := c.check(t, fmt.Sprintf("call %d", i), call, &engine.Ledger{})
		if !built || d.Step != decision.StepArgumentRules || len(d.Reasons) != 1 || len(d.Reasons[0].Violations) != 1 {
			t.Fatalf("call %d: built in Go %v, %s at %s, %d reasons; want one argument-rule refusal built in Go", i, built, d.Outcome, d.Step, len(d.Reasons))
		}
		ds = append(ds, d)
	}
	if walks != 1 {
		t.Errorf("the Explainer walked the repeated value %d times; want once", walks)
	}
	ds[0].Reasons[0].Violations[0].Path = "/changed"
	if ds[1].Reasons[0].Violations[0].Path != "/n" {
		t.Errorf("a decision's violations are shared with another's: %q", ds[1].Reasons[0].Violations[0].Path)
	}
}
