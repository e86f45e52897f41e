package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/jsonsuite"
)

// stockDecider evaluates the bundle opts compile to as a stock OPA does
// (OPA's rego package, its in-memory store, the policy's own Rego for
// every predicate), in process: input JSON in, decision out.
func stockDecider(t *testing.T, eng *mcpxpolicy.Engine, opts mcpxpolicy.Options) func(input []byte) decision.Decision {
	t.Helper()
	files, err := mcpxpolicy.BundleFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	ropts := []func(*rego.Rego){rego.Query("data.mcpx.decision"), rego.SetRegoVersion(ast.RegoV1)}
	for name, src := range files {
		switch {
		case strings.HasSuffix(name, ".rego"):
			ropts = append(ropts, rego.Module(name, string(src)))
		case name == "data.json":
			var data map[string]any
			dec := json.NewDecoder(bytes.NewReader(src))
			dec.UseNumber()
			if err := dec.Decode(&data); err != nil {
				t.Fatal(err)
			}
			ropts = append(ropts, rego.Store(inmem.NewFromObject(data)))
		}
	}
	pq, err := rego.New(ropts...).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return func(input []byte) decision.Decision {
		t.Helper()
		rs, err := pq.Eval(context.Background(), rego.EvalInput(decodeNumbers(t, input)))
		if err != nil || len(rs) != 1 {
			t.Fatalf("stock evaluation: %v %v", rs, err)
		}
		raw, err := json.Marshal(rs[0].Expressions[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		d, err := eng.ParseDecision(raw)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

func decodeNumbers(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSuiteThroughTheRealPath runs the official suite through the whole
// engine: every schema becomes a per-argument rule (argument "v", so "#"
// keeps its meaning) of one YAML config, loaded, compiled and prepared as
// an operator's would be; every case is a call whose argument v is the
// instance, decided through the SDK. Valid cases must be allowed, invalid
// ones denied by ArgumentRuleViolation. Schemas the compiler refuses are
// left out of the config (internal/config/schemarego's TestSuite counts
// them, and each refusal is a load error by itself).
func TestSuiteThroughTheRealPath(t *testing.T) {
	t.Parallel()
	type suiteCase struct {
		name  string
		tool  string
		data  any
		valid bool
	}
	var cases []suiteCase
	var rules bytes.Buffer
	dir := t.TempDir()
	accepted, refused := 0, 0
	for _, f := range jsonsuite.Files(t) {
		for gi, g := range f.Groups {
			tool := fmt.Sprintf("g%d_%s", gi, strings.TrimSuffix(f.Name, ".json"))
			tool = strings.NewReplacer("-", "_", ".", "_").Replace(tool)
			// Probe the rule alone: a refused schema is a load error.
			probe := filepath.Join(dir, "probe.yaml")
			rule := fmt.Sprintf("      - id: %s\n        tools: [%q]\n        argument: v\n        schema: %s\n", tool, tool, g.Schema)
			if err := os.WriteFile(probe, []byte("version: 1\nservers:\n  s:\n    argumentRules:\n"+rule), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := mcpxpolicy.Check(mcpxpolicy.Options{ConfigPaths: []string{probe}, Env: []string{}}); err != nil {
				refused += len(g.Tests)
				continue
			}
			accepted += len(g.Tests)
			rules.WriteString(rule)
			for _, c := range g.Tests {
				cases = append(cases, suiteCase{
					name: fmt.Sprintf("%s/%s/%s", f.Name, g.Description, c.Description),
					tool: tool, data: decodeNumbers(t, c.Data), valid: c.Valid,
				})
			}
		}
	}
	cfg := filepath.Join(dir, "suite.yaml")
	config := "version: 1\npolicy:\n  write: allow\n  unknownArgs: off\nservers:\n  s:\n    argumentRules:\n" + rules.String()
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{cfg}, Env: []string{}, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatalf("the accepted schemas do not load together: %v", err)
	}
	stock := stockDecider(t, eng, mcpxpolicy.Options{ConfigPaths: []string{cfg}, Env: []string{}})
	disagree := 0
	for _, c := range cases {
		call := decision.Call{Server: "s", Tool: decision.Tool{Name: c.tool, Annotations: readOnly}, Args: map[string]any{"v": c.data}}
		d, err := eng.Decide(context.Background(), call)
		ok := err == nil && ((c.valid && d.Outcome == decision.Allow) ||
			(!c.valid && d.Outcome == decision.Deny && d.Step == "argument_rules"))
		if !ok {
			disagree++
			t.Errorf("%s: valid=%v, got %s at %q (%v): %v", c.name, c.valid, d.Outcome, d.Step, err, d.First().Message)
		}
		// the whole document, violations and messages included, is the
		// one the policy gives on a stock OPA (the engine's Go predicates
		// only ever spare work)
		input, err := eng.OPAInput(call)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := generic(t, stock(input)), generic(t, d); !reflect.DeepEqual(g, w) {
			gj, _ := json.MarshalIndent(g, "", "  ")
			wj, _ := json.MarshalIndent(w, "", "  ")
			t.Errorf("%s: stock OPA decided\n%s\nthe engine decided\n%s", c.name, gj, wj)
		}
	}
	t.Logf("suite through config → compiler → engine: %d cases accepted, %d refused, %d disagreements", accepted, refused, disagree)
	if accepted < 1100 {
		t.Errorf("only %d cases accepted through the real path", accepted)
	}
}
