package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// TestLoadErrors pins one message per error class, with file and line.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		files map[string]string
		opts  config.LoadOptions
		want  []string // every error line, in order
	}{
		{
			name:  "unknown top-level key",
			files: map[string]string{"main.yaml": "version: 1\nservres: {}\n"},
			want:  []string{`main.yaml:2: servres: unknown key "servres", did you mean "servers"? (valid keys: ledger, policy, pool, servers, version)`},
		},
		{
			name:  "unknown policy key",
			files: map[string]string{"main.yaml": "policy:\n  wirte: ask\nversion: 1\n"},
			want:  []string{`main.yaml:2: policy.wirte: unknown key "wirte", did you mean "write"? (valid keys: confirmDestructive, enforce, exemptArgs, overrides, unknownArgs, write)`},
		},
		{
			name:  "unknown server key without a near one",
			files: map[string]string{"main.yaml": "servers:\n  fs:\n    colour: red\nversion: 1\n"},
			want:  []string{`main.yaml:3: servers.fs.colour: unknown key "colour" (valid keys: argumentRules, budgets, enforce, exemptArgs, flows, hiddenTools, labels, loopBreakers, pinTools, unknownArgs, unknownArgsTools, writePolicy, writeTools)`},
		},
		{
			name:  "unknown rule key",
			files: map[string]string{"main.yaml": "pool:\n  argumentRules:\n    - id: r\n      tools: [t]\n      schema: {}\n      descripton: x\nversion: 1\n"},
			want:  []string{`main.yaml:6: pool.argumentRules[0].descripton: unknown key "descripton", did you mean "description"? (valid keys: argument, description, examples, id, required, schema, tools)`},
		},
		{
			name:  "duplicate key",
			files: map[string]string{"main.yaml": "policy:\n  write: ask\n  write: deny\nversion: 1\n"},
			want:  []string{`main.yaml:3: policy.write: duplicate key "write" (first at line 2)`},
		},
		{
			name:  "bad writePolicy",
			files: map[string]string{"main.yaml": "version: 1\nservers:\n  fs:\n    writePolicy: sometimes\n"},
			want:  []string{`main.yaml:4: servers.fs.writePolicy: unknown mode "sometimes" (want ask, allow or deny)`},
		},
		{
			name:  "bad write",
			files: map[string]string{"main.yaml": "policy:\n  write: Allow\nversion: 1\n"},
			want:  []string{`main.yaml:2: policy.write: unknown mode "Allow" (want ask, allow or deny)`},
		},
		{
			name:  "bad unknownArgs",
			files: map[string]string{"main.yaml": "policy:\n  unknownArgs: maybe\nversion: 1\n"},
			want:  []string{`main.yaml:2: policy.unknownArgs: unknown mode "maybe" (want warn, reject or off; off is also spelled 0, false or no)`},
		},
		{
			name:  "unknownArgs true is not a mode",
			files: map[string]string{"main.yaml": "servers:\n  fs:\n    unknownArgs: true\nversion: 1\n"},
			want:  []string{`main.yaml:3: servers.fs.unknownArgs: unknown mode "true" (want warn, reject or off; off is also spelled 0, false or no)`},
		},
		{
			name:  "bad unknownArgsTools mode",
			files: map[string]string{"main.yaml": "pool:\n  unknownArgsTools:\n    - tools: [a]\n      mode: loud\nversion: 1\n"},
			want:  []string{`main.yaml:4: pool.unknownArgsTools[0].mode: unknown mode "loud" (want warn, reject or off; off is also spelled 0, false or no)`},
		},
		{
			name:  "bad enforce",
			files: map[string]string{"main.yaml": "policy:\n  enforce: dry-run\nversion: 1\n"},
			want:  []string{`main.yaml:2: policy.enforce: unknown mode "dry-run" (want enforce or shadow)`},
		},
		{
			name:  "bad server enforce",
			files: map[string]string{"main.yaml": "version: 1\nservers:\n  fs:\n    enforce: false\n"},
			want:  []string{`main.yaml:4: servers.fs.enforce: unknown mode "false" (want enforce or shadow)`},
		},
		{
			name:  "bad enforce from env and flags",
			files: map[string]string{"main.yaml": "servers:\n  fs: {}\nversion: 1\n"},
			opts:  config.LoadOptions{Env: []string{"MCPX_POLICY_SERVERS_FS_ENFORCE=observe"}, Set: map[string]string{"policy.enforce": "Shadow"}},
			want: []string{
				`env $MCPX_POLICY_SERVERS_FS_ENFORCE: servers.fs.enforce: unknown mode "observe" (want enforce or shadow)`,
				`flags: policy.enforce: unknown mode "Shadow" (want enforce or shadow)`,
			},
		},
		{
			name:  "unknownArgsTools entry without mode",
			files: map[string]string{"main.yaml": "pool:\n  unknownArgsTools:\n    - tools: [a]\nversion: 1\n"},
			want:  []string{`main.yaml:3: pool.unknownArgsTools[0]: entry has no mode (want warn, reject or off)`},
		},
		{
			name:  "confirmDestructive not a boolean",
			files: map[string]string{"main.yaml": "policy:\n  confirmDestructive: sure\nversion: 1\n"},
			want:  []string{`main.yaml:2: policy.confirmDestructive: want true or false, got a string ("sure")`},
		},
		{
			name:  "string where list expected",
			files: map[string]string{"main.yaml": "servers:\n  fs:\n    hiddenTools: delete_*\nversion: 1\n"},
			want:  []string{`main.yaml:3: servers.fs.hiddenTools: want a list of tool patterns, got a string ("delete_*")`},
		},
		{
			name:  "number in exemptArgs",
			files: map[string]string{"main.yaml": "policy:\n  exemptArgs: [cursor, 7]\nversion: 1\n"},
			want:  []string{`main.yaml:2: policy.exemptArgs[1]: want a string, got a number (7)`},
		},
		{
			name:  "servers not a mapping",
			files: map[string]string{"main.yaml": "servers: [fs]\nversion: 1\n"},
			want:  []string{`main.yaml:1: servers: want a mapping of server names, got a list`},
		},
		{
			name:  "bad glob bracket",
			files: map[string]string{"main.yaml": "pool:\n  hiddenTools:\n    - ok\n    - \"del[a-\"\nversion: 1\n"},
			want:  []string{`main.yaml:4: pool.hiddenTools[1]: tool pattern "del[a-" is not a valid glob: unterminated [ (a class ends with ])`},
		},
		{
			name:  "bad glob range",
			files: map[string]string{"main.yaml": "pool:\n  writeTools: [\"x[z-a]\"]\nversion: 1\n"},
			want:  []string{`main.yaml:2: pool.writeTools[0]: tool pattern "x[z-a]" is not a valid glob: bad range z-a in [ ]`},
		},
		{
			name:  "bad regex",
			files: map[string]string{"main.yaml": "servers:\n  fs:\n    hiddenTools: [\"/(/\"]\nversion: 1\n"},
			want:  []string{"main.yaml:3: servers.fs.hiddenTools[0]: tool pattern \"/(/\" is not a valid RE2 regex: error parsing regexp: missing closing ): `(`"},
		},
		{
			name:  "regex not closed",
			files: map[string]string{"main.yaml": "servers:\n  fs:\n    hiddenTools: [\"/^move_\"]\nversion: 1\n"},
			want:  []string{`main.yaml:3: servers.fs.hiddenTools[0]: tool pattern "/^move_" starts with / but does not end with / (a regex is written /re/)`},
		},
		{
			name:  "version 2",
			files: map[string]string{"main.yaml": "version: 2\n"},
			want:  []string{`main.yaml:1: version: unsupported config version 2 (want 1)`},
		},
		{
			name:  "version as string",
			files: map[string]string{"main.yaml": "version: \"1\"\n"},
			want:  []string{`main.yaml:1: version: unsupported config version "1" (want 1)`},
		},
		{
			name:  "rule without id",
			files: map[string]string{"main.yaml": "servers:\n  git:\n    argumentRules:\n      - tools: [git_push]\n        schema: {const: false}\nversion: 1\n"},
			want:  []string{`main.yaml:4: servers.git.argumentRules[0]: argument rule has no id (every rule needs a unique id)`},
		},
		{
			name: "duplicate rule id across layers",
			files: map[string]string{
				"main.yaml":        "pool:\n  argumentRules:\n    - id: r1\n      tools: [a]\n      schema: {}\nversion: 1\n",
				"conf.d/10-x.yaml": "servers:\n  fs:\n    argumentRules:\n      - id: r1\n        tools: [b]\n        schema: {}\nversion: 1\n",
			},
			want: []string{`conf.d/10-x.yaml:4: servers.fs.argumentRules[0]: duplicate rule id "r1" (first defined at main.yaml:3, pool.argumentRules[0]); rule ids are unique across the whole config`},
		},
		{
			name:  "rule without tools",
			files: map[string]string{"main.yaml": "pool:\n  argumentRules:\n    - id: r1\n      tools: []\n      schema: {}\nversion: 1\n"},
			want:  []string{`main.yaml:3: pool.argumentRules[0]: argument rule "r1" has no tools (want a list of tool patterns)`},
		},
		{
			name:  "rule without schema",
			files: map[string]string{"main.yaml": "pool:\n  argumentRules:\n    - id: r1\n      tools: [a]\nversion: 1\n"},
			want:  []string{`main.yaml:3: pool.argumentRules[0]: argument rule "r1" has no schema`},
		},
		{
			name:  "bad argument pointer",
			files: map[string]string{"main.yaml": "pool:\n  argumentRules:\n    - id: r1\n      tools: [a]\n      argument: /a~2b\n      schema: {}\nversion: 1\n"},
			want:  []string{`main.yaml:5: pool.argumentRules[0].argument: bad JSON Pointer "/a~2b": ~ must be followed by 0 or 1 (~0 is ~, ~1 is /)`},
		},
		{
			name:  "empty argument",
			files: map[string]string{"main.yaml": "pool:\n  argumentRules:\n    - id: r1\n      tools: [a]\n      argument: \"\"\n      schema: {}\nversion: 1\n"},
			want:  []string{`main.yaml:5: pool.argumentRules[0].argument: empty argument (want a name or a JSON Pointer such as /options/force)`},
		},
		{
			name:  "schema not a schema",
			files: map[string]string{"main.yaml": "pool:\n  argumentRules:\n    - id: r1\n      tools: [a]\n      schema: [1]\nversion: 1\n"},
			want:  []string{`main.yaml:5: pool.argumentRules[0].schema: want a JSON Schema (a mapping or a boolean), got a list`},
		},
		{
			name:  "schema number not JSON",
			files: map[string]string{"main.yaml": "pool:\n  argumentRules:\n    - id: r1\n      tools: [a]\n      schema:\n        maximum: .inf\nversion: 1\n"},
			want:  []string{`main.yaml:6: pool.argumentRules[0].schema: .inf is not a JSON number`},
		},
		{
			name:  "schema compiler error",
			files: map[string]string{"main.yaml": "version: 1\nservers:\n  fs:\n    argumentRules:\n      - id: fs-dyn\n        tools: [write_file]\n        description: x\n        schema:\n          $dynamicRef: \"#meta\"\n"},
			want:  []string{`main.yaml:8: servers.fs.argumentRules[0].schema: rule "fs-dyn": keyword $dynamicRef at /$dynamicRef; - is not supported`},
		},
		{
			name:  "schema compiler returns the wrong package",
			files: map[string]string{"main.yaml": "pool:\n  argumentRules:\n    - id: r1\n      tools: [a]\n      schema: true\nversion: 1\n"},
			opts:  config.LoadOptions{SchemaCompiler: func(any, string) (string, error) { return "package wrong\n", nil }},
			want:  []string{`main.yaml:5: pool.argumentRules[0].schema: rule "r1": generated Rego is package wrong, want mcpx.rules.s_b5bea41b6c623f7c (a bug in the schema compiler)`},
		},
		{
			name:  "override path missing",
			files: map[string]string{"main.yaml": "policy:\n  overrides:\n    - overrides/nope.rego\nversion: 1\n"},
			want:  []string{`main.yaml:3: policy.overrides[0]: override overrides/nope.rego: no such file or directory`},
		},
		{
			name: "override does not parse",
			files: map[string]string{
				"main.yaml":        "policy:\n  overrides: [ov]\nversion: 1\n",
				"ov/bad.rego":      "package mcpx.overrides\n\ndeny contains x if {\n",
				"ov/bad_test.rego": "this is never read\n",
			},
			want: []string{`main.yaml:2: policy.overrides[0]: override ov/bad.rego does not parse as Rego v1: ov/bad.rego:4: unexpected eof token`},
		},
		{
			name: "override in wrong package",
			files: map[string]string{
				"main.yaml": "policy:\n  overrides: [ov/x.rego]\nversion: 1\n",
				"ov/x.rego": "package mcpx.steps.hidden\n\ndeny contains {\"code\": \"x\"} if { true }\n",
			},
			want: []string{`main.yaml:2: policy.overrides[0]: override ov/x.rego is package mcpx.steps.hidden, want package mcpx.overrides`},
		},
		{
			name:  "invalid YAML",
			files: map[string]string{"main.yaml": "policy:\n  write: ask\n   unknownArgs: warn\nversion: 1\n"},
			want:  []string{`main.yaml:3: invalid YAML: mapping values are not allowed in this context`},
		},
		{
			name:  "missing file",
			files: map[string]string{"other.yaml": ""},
			want:  []string{`main.yaml: cannot read config file: no such file or directory`},
		},
		{
			name:  "bad env value",
			files: map[string]string{"main.yaml": "version: 1\n"},
			opts:  config.LoadOptions{Env: []string{"MCPX_POLICY_POLICY_WRITE=sometimes", "MCPX_POLICY_STATE_DIR=/tmp/x"}},
			want:  []string{`env $MCPX_POLICY_POLICY_WRITE: policy.write: unknown mode "sometimes" (want ask, allow or deny)`},
		},
		{
			name:  "unknown env setting",
			files: map[string]string{"main.yaml": "version: 1\n"},
			opts:  config.LoadOptions{Env: []string{"MCPX_POLICY_POLICY_WIRTE=deny"}},
			want:  []string{`env $MCPX_POLICY_POLICY_WIRTE: unknown setting (the environment sets MCPX_POLICY_POLICY_WRITE, MCPX_POLICY_POLICY_CONFIRMDESTRUCTIVE, MCPX_POLICY_POLICY_UNKNOWNARGS, MCPX_POLICY_POLICY_ENFORCE, MCPX_POLICY_POOL_PINTOOLS and MCPX_POLICY_SERVERS_<NAME>_WRITEPOLICY, _UNKNOWNARGS, _ENFORCE or _PINTOOLS)`},
		},
		{
			name:  "env for an unconfigured server",
			files: map[string]string{"main.yaml": "servers:\n  fs: {}\nversion: 1\n"},
			opts:  config.LoadOptions{Env: []string{"MCPX_POLICY_SERVERS_GIT_WRITEPOLICY=deny"}},
			want:  []string{`env $MCPX_POLICY_SERVERS_GIT_WRITEPOLICY: no configured server is named git (the name is upper-cased, other characters than letters and digits become _)`},
		},
		{
			name:  "bad flag",
			files: map[string]string{"main.yaml": "version: 1\n"},
			opts:  config.LoadOptions{Set: map[string]string{"policy.confirmDestructive": "perhaps", "policy.colour": "red"}},
			want: []string{
				`flags: policy.colour: unknown setting (flags set policy.write, policy.confirmDestructive, policy.unknownArgs, policy.enforce, pool.pinTools, servers.<name>.writePolicy, servers.<name>.unknownArgs, servers.<name>.enforce and servers.<name>.pinTools)`,
				`flags: policy.confirmDestructive: want true or false, got "perhaps"`,
			},
		},
		{
			name: "several errors together",
			files: map[string]string{
				"main.yaml":     "version: 1\npolicy:\n  write: sometimes\nservers:\n  fs:\n    hiddenTools: [\"[\"]\n",
				"conf.d/a.yaml": "policy:\n  unknownArgs: loud\nversion: 1\n",
				"conf.d/b.yml":  "this: is not read\n",
				"conf.d/c.yaml": "pool:\n  argumentRules:\n    - id: x\nversion: 1\n",
			},
			want: []string{
				`main.yaml:3: policy.write: unknown mode "sometimes" (want ask, allow or deny)`,
				`main.yaml:6: servers.fs.hiddenTools[0]: tool pattern "[" is not a valid glob: unterminated [ (a class ends with ])`,
				`conf.d/a.yaml:2: policy.unknownArgs: unknown mode "loud" (want warn, reject or off; off is also spelled 0, false or no)`,
				`conf.d/c.yaml:3: pool.argumentRules[0]: argument rule "x" has no tools (want a list of tool patterns)`,
				`conf.d/c.yaml:3: pool.argumentRules[0]: argument rule "x" has no schema`,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err, dir := load(t, tc.files, tc.opts)
			if err == nil {
				t.Fatalf("Load succeeded, want errors:\n%s", strings.Join(tc.want, "\n"))
			}
			if c != nil {
				t.Errorf("Load returned a Compiled with an error")
			}
			var ces config.ConfigErrors
			if !errors.As(err, &ces) {
				t.Fatalf("error is %T, want ConfigErrors", err)
			}
			var ce *config.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("errors.As(*ConfigError) failed")
			}
			got := strings.Split(rel(dir, err.Error()), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(tc.want, "\n      "))
			}
		})
	}
}

func TestConfigErrorFields(t *testing.T) {
	t.Parallel()
	_, err, dir := load(t, map[string]string{"main.yaml": "version: 1\nservers:\n  fs:\n    writePolicy: sometimes\n"}, config.LoadOptions{})
	var ce *config.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("no *ConfigError in %v", err)
	}
	if rel(dir, ce.File) != "main.yaml" || ce.Line != 4 || ce.Path != "servers.fs.writePolicy" {
		t.Errorf("got File=%q Line=%d Path=%q", ce.File, ce.Line, ce.Path)
	}
}
