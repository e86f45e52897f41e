package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/jsonsuite"
)

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
// left out of the config (internal/bundle/schemarego's TestSuite counts
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
	disagree := 0
	for _, c := range cases {
		call := mcpxpolicy.Call{Server: "s", Tool: mcpxpolicy.Tool{Name: c.tool, Annotations: readOnly}, Args: map[string]any{"v": c.data}}
		d, err := eng.Decide(context.Background(), call)
		ok := err == nil && ((c.valid && d.Outcome == mcpxpolicy.Allow) ||
			(!c.valid && d.Outcome == mcpxpolicy.Deny && d.Step == "argument_rules"))
		if !ok {
			disagree++
			t.Errorf("%s: valid=%v, got %s at %q (%v): %v", c.name, c.valid, d.Outcome, d.Step, err, d.First().Message)
		}
	}
	t.Logf("suite through config → compiler → engine: %d cases accepted, %d refused, %d disagreements", accepted, refused, disagree)
	if accepted < 1100 {
		t.Errorf("only %d cases accepted through the real path", accepted)
	}
}
