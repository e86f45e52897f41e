package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// realRules loads with the real schema compiler and rule evaluator, as the
// SDK does.
var realRules = config.LoadOptions{SchemaCompiler: schemarego.Compile, RuleEvaluator: schemarego.Evaluate}

const examplesConfig = `version: 1
servers:
  fs:
    argumentRules:
      - id: ws
        tools: [write_file]
        schema:
          properties:
            path: {type: string, pattern: "^/workspace/"}
        examples:
          valid:
            - {path: /workspace/a.txt, content: hi}
            - {}
          invalid:
            - {path: /etc/passwd}
            - {path: 7}
      - id: no-force
        tools: [git_push]
        argument: /options/force
        schema: {const: false}
        examples:
          valid: [false]
          invalid: [true, "false", null]
`

// TestRuleExamplesHold: every example of a rule is decided by the rule's
// generated code at load; all hold here, and Compiled.Examples counts
// them. Examples are not policy: they leave the revision as it is.
func TestRuleExamplesHold(t *testing.T) {
	t.Parallel()
	c, err, dir := load(t, map[string]string{"main.yaml": examplesConfig}, realRules)
	if err != nil {
		t.Fatal(err)
	}
	if c.Examples != 8 {
		t.Errorf("Examples = %d, want 8", c.Examples)
	}
	// The same file with every line of the examples a comment: the rules
	// keep their file and lines, so their origins (part of the data) too.
	lines := strings.Split(examplesConfig, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(l, "        examples:") {
			in = true
		} else if !strings.HasPrefix(l, "          ") {
			in = false
		}
		if in {
			lines[i] = "#"
		}
	}
	main := filepath.Join(dir, "main.yaml")
	if err := os.WriteFile(main, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := realRules
	opts.Paths, opts.Env = []string{main}, []string{}
	plain, err := config.Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Examples != 0 || plain.Revision != c.Revision {
		t.Errorf("without examples: Examples %d, revision %s; want 0 and the same revision %s", plain.Examples, plain.Revision, c.Revision)
	}
}

// TestRuleExampleErrors: a rule that disagrees with its own example is a
// config error at the example's file and line, naming the rule, the
// example and (for a valid one) what the rule refuses; so is an example
// of the wrong shape, and a rule with examples when nothing can decide
// them.
func TestRuleExampleErrors(t *testing.T) {
	t.Parallel()
	rule := func(extra string) string {
		return "version: 1\nservers:\n  fs:\n    argumentRules:\n      - id: ws\n        tools: [write_file]\n        schema:\n          properties:\n            path: {type: string, pattern: \"^/workspace/\"}\n" + extra
	}
	cases := []struct {
		name string
		cfg  string
		opts config.LoadOptions
		want []string
	}{
		{
			name: "valid example the rule refuses",
			cfg:  rule("        examples:\n          valid:\n            - {path: /workspace/a}\n            - {path: /etc/passwd}\n"),
			want: []string{`main.yaml:13: servers.fs.argumentRules[0].examples.valid[1]: rule "ws": example {"path":"/etc/passwd"} is listed as valid, but the rule refuses it (pattern "^/workspace/" at /path)`},
		},
		{
			name: "invalid example the rule accepts",
			cfg:  rule("        examples:\n          invalid:\n            - {path: /workspace/ok}\n"),
			want: []string{`main.yaml:12: servers.fs.argumentRules[0].examples.invalid[0]: rule "ws": example {"path":"/workspace/ok"} is listed as invalid, but the rule accepts it`},
		},
		{
			name: "per-argument rule at a pointer",
			cfg:  "version: 1\npool:\n  argumentRules:\n    - id: rows\n      tools: [query]\n      argument: /limits/rows\n      schema: {type: integer, maximum: 100}\n      examples: {valid: [100, 101]}\n",
			want: []string{`main.yaml:8: pool.argumentRules[0].examples.valid[1]: rule "rows": example 101 is listed as valid, but the rule refuses it (maximum 100 at /limits/rows)`},
		},
		{
			name: "whole-arguments example that is no object",
			cfg:  rule("        examples:\n          invalid: [\"/etc/passwd\"]\n"),
			want: []string{`main.yaml:11: servers.fs.argumentRules[0].examples.invalid[0]: argument rule "ws" has no argument, so each example is a whole arguments object (a mapping), got "/etc/passwd"`},
		},
		{
			name: "unknown key and a list that is none",
			cfg:  rule("        examples:\n          valid: {path: /workspace/a}\n          match: []\n"),
			want: []string{
				`main.yaml:11: servers.fs.argumentRules[0].examples.valid: want a list of examples, got a mapping`,
				`main.yaml:12: servers.fs.argumentRules[0].examples.match: unknown key "match" (valid keys: invalid, valid)`,
			},
		},
		{
			name: "no evaluator",
			cfg:  rule("        examples:\n          valid: [{path: /workspace/a}]\n"),
			opts: config.LoadOptions{SchemaCompiler: schemarego.Compile},
			want: []string{`main.yaml:5: servers.fs.argumentRules[0]: rule "ws": its examples cannot be decided: no rule evaluator is configured to check them`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := tc.opts
			if opts.SchemaCompiler == nil {
				opts = realRules
			}
			_, err, dir := load(t, map[string]string{"main.yaml": tc.cfg}, opts)
			if err == nil {
				t.Fatalf("Load succeeded, want:\n%s", strings.Join(tc.want, "\n"))
			}
			if got := rel(dir, err.Error()); got != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n got: %s\nwant: %s", got, strings.Join(tc.want, "\n      "))
			}
		})
	}
}

// TestCompareStrictness: the order the loader warns by, as the config
// diff reads it.
func TestCompareStrictness(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind, from, to string
		cmp            int
		ok             bool
	}{
		{config.KindWrite, "ask", "allow", -1, true},
		{config.KindWrite, "ask", "deny", 1, true},
		{config.KindWrite, "deny", "deny", 0, true},
		{config.KindUnknownArgs, "reject", "warn", -1, true},
		{config.KindUnknownArgs, "off", "warn", 1, true},
		{config.KindBool, "false", "true", 1, true},
		{config.KindWrite, "ask", "sometimes", 0, false},
		{"colour", "red", "blue", 0, false},
	}
	for _, tc := range cases {
		cmp, ok := config.CompareStrictness(tc.kind, tc.from, tc.to)
		if cmp != tc.cmp || ok != tc.ok {
			t.Errorf("CompareStrictness(%s, %s, %s) = %d, %v; want %d, %v", tc.kind, tc.from, tc.to, cmp, ok, tc.cmp, tc.ok)
		}
	}
}
