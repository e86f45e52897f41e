package config_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
	policy "github.com/mcpx/mcpx-policy/rego"
)

// TestContractWithPolicy runs the compiled data and generated packages
// (real schema compiler) under the static policy in rego/, checking the
// seam of ADR 0001 end to end on a few calls.
func TestContractWithPolicy(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"main.yaml": smallConfig})
	c, err := config.Load(config.LoadOptions{Paths: []string{filepath.Join(dir, "main.yaml")}, Env: []string{}, SchemaCompiler: schemarego.Compile})
	if err != nil {
		t.Fatal(err)
	}
	opts := []func(*rego.Rego){
		rego.Query("data.mcpx.decision"),
		rego.Store(inmem.NewFromObject(map[string]any{"mcpx": c.Data})),
		rego.SetRegoVersion(ast.RegoV1),
		rego.StrictBuiltinErrors(true),
	}
	for name, src := range policy.Modules() {
		opts = append(opts, rego.Module(name, src))
	}
	for name, src := range c.Modules {
		opts = append(opts, rego.Module(name, src))
	}
	pq, err := rego.New(opts...).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tool := func(name string, readOnly bool) map[string]any {
		return map[string]any{"name": name, "annotations": map[string]any{"readOnlyHint": readOnly, "destructiveHint": false},
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{}, "force": map[string]any{}, "options": map[string]any{}}}}
	}
	cases := []struct {
		name          string
		server        string
		tool          map[string]any
		args          map[string]any
		outcome, step string
	}{
		{"rule violation", "fs", tool("write_file", false), map[string]any{"path": "/etc/passwd"}, "deny", "argument_rules"},
		{"rule passes, fs allows writes", "fs", tool("write_file", false), map[string]any{"path": "/workspace/a"}, "allow", ""},
		{"regex rule pattern", "fs", tool("move_file", false), map[string]any{"path": "/tmp/x"}, "deny", "argument_rules"},
		{"server hidden glob", "fs", tool("delete_all", false), map[string]any{}, "deny", "hidden"},
		{"pool hidden glob", "git", tool("debug_dump", true), map[string]any{}, "deny", "hidden"},
		{"per-argument rule", "git", tool("git_push", false), map[string]any{"force": true}, "deny", "argument_rules"},
		{"required pointer argument absent", "git", tool("git_pull", false), map[string]any{}, "deny", "argument_rules"},
		{"pool rule on a read", "git", tool("git_log", true), map[string]any{"token": "x", "options": map[string]any{"fo/rce~": false}}, "deny", "argument_rules"},
		{"read allowed", "git", tool("git_log", true), map[string]any{"options": map[string]any{"fo/rce~": false}}, "allow", ""},
		{"write asks by default", "git", tool("git_log", false), map[string]any{"options": map[string]any{"fo/rce~": false}}, "ask", "write_mode"},
	}
	for _, tc := range cases {
		input := map[string]any{"surface": "mcp", "server": tc.server, "tool": tc.tool, "args": tc.args, "ledger": map[string]any{"entries": []any{}}}
		rs, err := pq.Eval(context.Background(), rego.EvalInput(input))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(rs) != 1 {
			t.Fatalf("%s: %d results", tc.name, len(rs))
		}
		d := rs[0].Expressions[0].Value.(map[string]any)
		if d["outcome"] != tc.outcome || d["step"] != tc.step {
			t.Errorf("%s: outcome %v step %v, want %s %s\n%v", tc.name, d["outcome"], d["step"], tc.outcome, tc.step, d["reasons"])
		}
	}
}
