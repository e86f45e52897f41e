package policy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/open-policy-agent/opa/v1/ast"
)

const stepsConfig = `version: 1
policy:
  write: ask
  unknownArgs: warn
  exemptArgs: [cursor]
pool:
  hiddenTools: ["shutdown"]
servers:
  fs:
    writePolicy: allow
    hiddenTools: ["delete_*"]
    unknownArgs: reject
    argumentRules:
      - id: fs-writes-in-workspace
        tools: ["write_file", "create_directory", "/^move_/"]
        description: writes stay in the workspace
        schema:
          properties:
            path: {type: string, pattern: "^/workspace/"}
  git:
    writePolicy: deny
    argumentRules:
      - id: no-force-push
        tools: ["git_push"]
        argument: force
        schema: {const: false}
  vault:
    writePolicy: allow
`

// TestEachStepDecides walks the check order through the SDK: each row is a
// call, the outcome and deciding step it must get, and every reason code in
// step order.
func TestEachStepDecides(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, stepsConfig)
	cases := []struct {
		name    string
		call    decision.Call
		outcome decision.Outcome
		step    decision.Step
		codes   []decision.Code
		warn    []decision.Code
		message string // a substring of the deciding reason's message
	}{
		{"read passes", decision.Call{Server: "fs", Tool: readFile, Args: map[string]any{"path": "/etc/hosts"}},
			decision.Allow, "", nil, nil, ""},
		{"hidden by server glob", decision.Call{Server: "fs", Tool: deleteF, Args: map[string]any{"path": "/x"}},
			decision.Deny, "hidden", []decision.Code{decision.HiddenTool}, nil, `tool "delete_file" on "fs" is hidden`},
		{"hidden by pool name on any server", decision.Call{Server: "other", Tool: decision.Tool{Name: "shutdown"}},
			decision.Deny, "hidden", []decision.Code{decision.HiddenTool}, nil, ""},
		{"unknown argument rejected with suggestion", decision.Call{Server: "fs", Tool: readFile, Args: map[string]any{"path": "/a", "line": 3}},
			decision.Deny, "unknown_args", []decision.Code{decision.UnknownArguments}, nil, `unknown argument "line" (did you mean "lines"?)`},
		{"exempt argument not reported", decision.Call{Server: "fs", Tool: readFile, Args: map[string]any{"path": "/a", "cursor": "c"}},
			decision.Allow, "", nil, nil, ""},
		{"unknown argument warned elsewhere", decision.Call{Server: "other", Tool: readFile, Args: map[string]any{"path": "/a", "tial": 3}},
			decision.Allow, "", nil, []decision.Code{decision.IgnoredArguments}, ""},
		{"argument rule violation", decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/etc/passwd", "content": "x"}},
			decision.Deny, "argument_rules", []decision.Code{decision.ArgumentRuleViolation},
			nil, `fs.write_file: /path "/etc/passwd" does not match ^/workspace/ (rule fs-writes-in-workspace, `},
		{"rule passes inside the workspace", decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/workspace/a", "content": "x"}},
			decision.Allow, "", nil, nil, ""},
		{"every finding kept, first deny decides", decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/etc/x", "contnet": "x"}},
			decision.Deny, "unknown_args", []decision.Code{decision.UnknownArguments, decision.ArgumentRuleViolation}, nil, ""},
		{"write mode deny", decision.Call{Server: "git", Tool: gitPush, Args: map[string]any{"force": false}},
			decision.Deny, "write_mode", []decision.Code{decision.WriteDenied}, nil, "writes to git are denied"},
		{"per-argument rule and write mode both deny", decision.Call{Server: "git", Tool: gitPush, Args: map[string]any{"force": true}},
			decision.Deny, "argument_rules", []decision.Code{decision.ArgumentRuleViolation, decision.WriteDenied}, nil, "/force true is not false"},
		{"write mode ask for an unconfigured server", decision.Call{Server: "other", Tool: writeFile, Args: map[string]any{"path": "/a"}},
			decision.Ask, "write_mode", []decision.Code{decision.WriteNeedsConfirmation}, nil, "need confirmation"},
		{"caller's resolved mode wins", decision.Call{Server: "fs", Tool: mkdir, Args: map[string]any{"path": "/workspace/d"}, Mode: "ask"},
			decision.Ask, "write_mode", []decision.Code{decision.WriteNeedsConfirmation}, nil, ""},
		{"missing annotations are a destructive write", decision.Call{Server: "other", Tool: decision.Tool{Name: "frob"}},
			decision.Ask, "write_mode", []decision.Code{decision.WriteNeedsConfirmation}, nil, ""},
		{"empty tool name is invalid input", decision.Call{Server: "fs", Tool: decision.Tool{}},
			decision.Deny, "input", []decision.Code{decision.InvalidInput}, nil, "tool.name must be a non-empty string"},
		{"unknown caller mode is invalid input", decision.Call{Server: "fs", Tool: readFile, Mode: "sometimes"},
			decision.Deny, "input", []decision.Code{decision.InvalidInput}, nil, `mode "sometimes" is not a write mode`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := decide(t, eng, c.call)
			if d.Outcome != c.outcome || d.Step != c.step {
				t.Fatalf("got %s at step %q, want %s at %q: %+v", d.Outcome, d.Step, c.outcome, c.step, d.Reasons)
			}
			if want := append([]decision.Code{}, c.codes...); !sameCodes(codes(d.Reasons), want) {
				t.Fatalf("reasons %v, want %v", codes(d.Reasons), want)
			}
			if want := append([]decision.Code{}, c.warn...); !sameCodes(codes(d.Warnings), want) {
				t.Fatalf("warnings %v, want %v", codes(d.Warnings), want)
			}
			if c.message != "" && !strings.Contains(d.First().Message, c.message) {
				t.Fatalf("message %q does not contain %q", d.First().Message, c.message)
			}
			sum, _ := decision.CallSHA256(c.call.Server, c.call.Tool.Name, c.call.Args)
			if c.step != "input" && d.Call.SHA256 != sum {
				t.Fatalf("call sha256 %q, want %q", d.Call.SHA256, sum)
			}
		})
	}
}

// TestHiddenToolLeaksNothing: the decision of a hidden tool carries only
// HiddenTool — no schema, no rule, no unknown argument, no write finding.
func TestHiddenToolLeaksNothing(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, stepsConfig)
	d := decide(t, eng, decision.Call{Server: "fs", Tool: deleteF, Args: map[string]any{"path": "/etc/x", "nope": 1}})
	if len(d.Reasons) != 1 || d.Reasons[0].Code != decision.HiddenTool || len(d.Warnings) != 0 {
		t.Fatalf("hidden decision has %v / %v", d.Reasons, d.Warnings)
	}
	r := d.Reasons[0]
	if len(r.Violations) != 0 || len(r.Details) != 0 || strings.Contains(r.Message, "secret_schema_key") || strings.Contains(r.Message, "nope") {
		t.Fatalf("hidden reason leaks: %+v", r)
	}
	if d.Write || d.Destructive {
		t.Fatalf("hidden decision reports write=%v destructive=%v", d.Write, d.Destructive)
	}
}

// TestDestructiveFloor: confirmDestructive asks for destructive writes even
// under allow, not for additive ones, and never loosens a deny.
func TestDestructiveFloor(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, strings.Replace(stepsConfig, "  write: ask\n", "  write: ask\n  confirmDestructive: true\n", 1))
	d := decide(t, eng, decision.Call{Server: "vault", Tool: writeFile, Args: map[string]any{"path": "/a"}})
	if d.Outcome != decision.Ask || d.Step != "destructive_floor" || !sameCodes(codes(d.Reasons), []decision.Code{decision.DestructiveNeedsConfirmation}) {
		t.Fatalf("destructive write under allow: %s %s %v", d.Outcome, d.Step, codes(d.Reasons))
	}
	if d := decide(t, eng, decision.Call{Server: "vault", Tool: mkdir, Args: map[string]any{"path": "/a"}}); d.Outcome != decision.Allow {
		t.Fatalf("additive write under allow: %s %v", d.Outcome, codes(d.Reasons))
	}
	if d := decide(t, eng, decision.Call{Server: "git", Tool: decision.Tool{Name: "git_reset"}}); d.Outcome != decision.Deny {
		t.Fatalf("destructive write under deny: %s", d.Outcome)
	}
}

// TestWriteToolsForceAWrite: an operator's writeTools pattern makes a tool
// that claims to be read-only count as a write.
func TestWriteToolsForceAWrite(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, stepsConfig+"    writeTools: [\"read_*\"]\n")
	d := decide(t, eng, decision.Call{Server: "vault", Tool: readFile, Args: map[string]any{"path": "/a"}})
	if !d.Write {
		t.Fatalf("read_file under writeTools is not a write: %+v", d)
	}
	d = decide(t, eng, decision.Call{Server: "vault", Tool: readFile, Args: map[string]any{"path": "/a"}, Mode: "deny"})
	if d.Outcome != decision.Deny || d.Step != "write_mode" {
		t.Fatalf("forced write under deny: %s %s", d.Outcome, d.Step)
	}
}

// TestArgumentsMustBeJSON: a Go caller may put OPA values in a call's
// arguments; OPA would pass a set through while the call's hash reads it
// as a JSON array, and the argument-rules step takes a set as "argument
// absent". Such a call is invalid input, never a pass.
func TestArgumentsMustBeJSON(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, `version: 1
servers:
  kv:
    writePolicy: allow
    argumentRules:
      - id: short-keys
        tools: ["put"]
        argument: key
        schema: {type: string, maxLength: 3}
`)
	put := decision.Tool{Name: "put", Annotations: &decision.Annotations{DestructiveHint: ptr(false)}}
	for _, v := range []any{ast.NewSet(ast.StringTerm("absent")), ast.SetTerm(ast.StringTerm("absent")), ast.StringTerm("toolong"), ast.String("toolong")} {
		d, err := eng.Decide(context.Background(), decision.Call{Server: "kv", Tool: put, Args: map[string]any{"key": v}})
		if err == nil || d.Outcome != decision.Deny || !sameCodes(codes(d.Reasons), []decision.Code{decision.InvalidInput}) {
			t.Errorf("key %v: got %s %v (err %v), want an InvalidInput deny", v, d.Outcome, codes(d.Reasons), err)
		}
	}
	if d := decide(t, eng, decision.Call{Server: "kv", Tool: put, Args: map[string]any{"key": "toolong"}}); d.Outcome != decision.Deny || d.Step != "argument_rules" {
		t.Errorf("a plain string breaking the rule: got %s at %q, want a deny at argument_rules", d.Outcome, d.Step)
	}
}
