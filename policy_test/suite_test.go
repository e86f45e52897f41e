package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/jsonsuite"
	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// stockDecider evaluates the bundle opts compile to as a stock OPA does
// (OPA's rego package, its in-memory store, the policy's own Rego for
// every predicate), in process: input JSON in, decision out.
func stockDecider(t *testing.T, eng *mcpxpolicy.Engine, opts mcpxpolicy.Options) func(call decision.Call, input []byte) decision.Decision {
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
	return func(call decision.Call, input []byte) decision.Decision {
		t.Helper()
		rs, err := pq.Eval(context.Background(), rego.EvalInput(decodeNumbers(t, input)))
		if err != nil || len(rs) != 1 {
			t.Fatalf("stock evaluation: %v %v", rs, err)
		}
		raw, err := json.Marshal(rs[0].Expressions[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		d, err := eng.ParseDecision(call, raw)
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
// load errors of their rules, each at its rule's path: they are left out
// of the config (internal/config/schemarego's TestSuite counts them per
// file). The suite is the one internal/jsonsuite pins
// (JSON-Schema-Test-Suite 83e866b4 as github.com/google/jsonschema-go
// v0.4.3 ships it).
func TestSuiteThroughTheRealPath(t *testing.T) {
	t.Parallel()
	type suiteCase struct {
		name  string
		tool  string
		data  any
		valid bool
	}
	groups := jsonsuite.Rules(t)
	rules := make([]string, len(groups))
	for i, g := range groups {
		rules[i] = g.YAML
	}
	dir := t.TempDir()
	refusedRules := refusedSuiteRules(t, dir, rules)
	var cases []suiteCase
	var accepted strings.Builder
	nAccepted, refused := 0, 0
	for i, g := range groups {
		if refusedRules[i] {
			refused += len(g.Cases)
			continue
		}
		nAccepted += len(g.Cases)
		accepted.WriteString(g.YAML)
		for _, c := range g.Cases {
			cases = append(cases, suiteCase{name: c.Name, tool: g.Tool, data: c.Data, valid: c.Valid})
		}
	}
	cfg := filepath.Join(dir, "suite.yaml")
	config := jsonsuite.RuleHeader + accepted.String()
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{cfg}, Env: []string{}, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatalf("the accepted schemas do not load together: %v", err)
	}
	stock := stockDecider(t, eng, mcpxpolicy.Options{ConfigPaths: []string{cfg}, Env: []string{}})
	disagree := 0
	for i, c := range cases {
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
		// only ever spare work): every case in a full run, every
		// sweep.Stride-th in a quick one
		if !sweep.Take(i) {
			continue
		}
		input, err := eng.OPAInput(call)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := generic(t, stock(call, input)), generic(t, d); !reflect.DeepEqual(g, w) {
			gj, _ := json.MarshalIndent(g, "", "  ")
			wj, _ := json.MarshalIndent(w, "", "  ")
			t.Errorf("%s: stock OPA decided\n%s\nthe engine decided\n%s", c.name, gj, wj)
		}
	}
	t.Logf("suite through config → compiler → engine: %d cases accepted, %d refused, %d disagreements; compared with a stock OPA: %s", nAccepted, refused, disagree, sweep.Describe(len(cases)))
	// 1,005 of the pinned suite's 1,099 cases (schemarego's TestSuite
	// has the count per file)
	if nAccepted < 1005 {
		t.Errorf("only %d cases accepted through the real path", nAccepted)
	}
}

// refusedSuiteRules checks one config holding every rule (each a YAML list
// item under servers.s.argumentRules) and returns the indexes of the rules
// the load refuses: each refusal is a config error at its rule's path. An
// error elsewhere fails the test.
func refusedSuiteRules(t *testing.T, dir string, rules []string) map[int]bool {
	t.Helper()
	probe := filepath.Join(dir, "probe.yaml")
	if err := os.WriteFile(probe, []byte("version: 1\nservers:\n  s:\n    argumentRules:\n"+strings.Join(rules, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := map[int]bool{}
	_, err := mcpxpolicy.Check(mcpxpolicy.Options{ConfigPaths: []string{probe}, Env: []string{}})
	if err == nil {
		return refused
	}
	list, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("checking the suite's rules: %v", err)
	}
	at := regexp.MustCompile(`^servers\.s\.argumentRules\[(\d+)\]`)
	for _, e := range list.Unwrap() {
		var ce *mcpxpolicy.ConfigError
		var m []string
		if errors.As(e, &ce) {
			m = at.FindStringSubmatch(ce.Path)
		}
		if m == nil {
			t.Fatalf("an error outside the suite's rules: %v", e)
		}
		i, _ := strconv.Atoi(m[1])
		refused[i] = true
	}
	return refused
}
