package render_test

import (
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/render"
)

// goldenCase is one realistic call and the decision the engine makes for it,
// built by hand.
type goldenCase struct {
	name string // golden file stem: the reason code, or "Allow"
	call decision.Call
	d    decision.Decision
}

func boolp(b bool) *bool { return &b }

var fsSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"path":    map[string]any{"type": "string"},
		"content": map[string]any{"type": "string"},
	},
}

func fsWrite(args map[string]any) decision.Call {
	return decision.Call{
		Surface: "mcp",
		Server:  "fs",
		Tool: decision.Tool{Name: "write_file", InputSchema: fsSchema,
			Annotations: &decision.Annotations{ReadOnlyHint: boolp(false), DestructiveHint: boolp(true)}},
		Args: args,
	}
}

// ref returns the CallRef of call with the sha256 of its canonical form.
func ref(t *testing.T, call decision.Call) decision.CallRef {
	t.Helper()
	sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if err != nil {
		t.Fatal(err)
	}
	return decision.CallRef{Server: call.Server, Tool: call.Tool.Name, SHA256: sum}
}

func reason(code decision.Code, msg string) decision.Reason {
	return decision.Reason{Code: code, Step: code.Info().Step, Message: msg}
}

func deny(t *testing.T, call decision.Call, write bool, rs ...decision.Reason) decision.Decision {
	t.Helper()
	return decision.Decision{Outcome: decision.Deny, Step: rs[0].Step, Reasons: rs,
		Warnings: []decision.Reason{}, Write: write, Destructive: write, Call: ref(t, call)}
}

func ask(t *testing.T, call decision.Call, destructive bool, rs ...decision.Reason) decision.Decision {
	t.Helper()
	return decision.Decision{Outcome: decision.Ask, Step: rs[0].Step, Reasons: rs,
		Warnings: []decision.Reason{}, Write: true, Destructive: destructive, Call: ref(t, call)}
}

// The calls of the asks: they carry secrets, so the goldens show redaction.
func httpPost() decision.Call {
	return decision.Call{
		Surface: "mcp",
		Server:  "http",
		Tool:    decision.Tool{Name: "post_json"},
		Args: map[string]any{
			"url": "https://api.example.com/v1/deploys?access_token=qwerty123secret",
			"headers": map[string]any{
				"Authorization": "Bearer 8xKq0ZtYwV3nR7uLp2sD5fGh",
				"Content-Type":  "application/json",
			},
			"body": map[string]any{"service": "billing", "version": "2.14.0", "replicas": 3},
		},
	}
}

func sqlExec() decision.Call {
	long := "-- nightly cleanup\n"
	for len(long) < 600 {
		long += "DELETE FROM sessions WHERE expires_at < now() - interval '30 days';\n"
	}
	return decision.Call{
		Surface: "mcp",
		Server:  "db",
		Tool:    decision.Tool{Name: "execute_sql"},
		Args: map[string]any{
			"database_url": "postgres://app:Pg-S3cret-99@db.internal:5432/prod",
			"sql":          long,
		},
	}
}

func slackPost() decision.Call {
	return decision.Call{
		Surface: "mcp",
		Server:  "slack",
		Tool:    decision.Tool{Name: "post_message"},
		Args:    map[string]any{"channel": "#general", "text": "Deploy of billing 2.14.0 starts at 14:00 UTC."},
	}
}

// unknownDetails are the details the unknown-args step reports.
func unknownDetails() map[string]any {
	return map[string]any{
		"unknown": []any{
			map[string]any{"path": "/colour", "key": "colour", "suggestion": ""},
			map[string]any{"path": "/line", "key": "line", "suggestion": "lines"},
		},
		"more":  0,
		"valid": []any{"head", "lines", "path", "tail"},
	}
}

func goldenCases(t *testing.T) []goldenCase {
	t.Helper()
	var cs []goldenCase
	add := func(name string, call decision.Call, d decision.Decision) {
		cs = append(cs, goldenCase{name: name, call: call, d: d})
	}

	pinned := "4b2c8e0f19a7d3c56e81f0a2b9d4c7e3f6a1b8d0c2e5f7a9b3d6c8e0f2a4b6d8"
	changedSum := "9e7d5c3b1a0f8e6d4c2b0a9f7e5d3c1b9a8f6e4d2c0b8a7f5e3d1c9b7a6f4e2d"
	pinCall := fsWrite(map[string]any{"path": "/workspace/notes.md", "content": "hello"})
	pinReason := reason(decision.ToolDefinitionChanged,
		"fs.write_file: the tool's definition changed since it was pinned (description, annotations changed; pinned sha256 4b2c8e0f19a7, now 9e7d5c3b1a0f); refused until an operator reviews the change and accepts it with: mcpx-policy pins accept fs write_file --sha256 "+changedSum)
	pinReason.Details = map[string]any{"mode": "deny", "pinned_sha256": pinned, "sha256": changedSum,
		"changed": []any{"description", "annotations"}, "accept": "mcpx-policy pins accept fs write_file --sha256 " + changedSum}
	add("ToolDefinitionChanged", pinCall, deny(t, pinCall, true, pinReason))

	spentCall := fsWrite(map[string]any{"path": "/workspace/notes.md", "content": "hello"})
	spent := reason(decision.WriteBudgetExceeded,
		"fs.write_file: write budget \"fs-writes\" allows 20 writes per 1h per principal, and 20 were dispatched in the window; this write is refused until 2026-12-01T23:00:00Z (retry then)")
	spent.Details = map[string]any{"budget": "fs-writes", "max": 20, "window": "1h", "writes": "all", "per": "principal",
		"count": 20, "retry_at": "2026-12-01T23:00:00Z"}
	add("WriteBudgetExceeded", spentCall, deny(t, spentCall, true, spent))
	loop := reason(decision.RepeatedCall,
		"fs.write_file: this exact call was dispatched 3 times in the last 10m, the most loop breaker \"fs-loops\" allows; it looks like a loop, so it is refused until 2026-12-01T23:00:00Z")
	loop.Details = map[string]any{"loop_breaker": "fs-loops", "max": 3, "window": "10m", "count": 3, "retry_at": "2026-12-01T23:00:00Z"}
	add("RepeatedCall", spentCall, deny(t, spentCall, true, loop))

	fd := reason(decision.FlowDenied,
		"slack.post_message: flow rule \"no-exfiltration\" (mcpx-policy.yaml:40) denies calls to tools labelled \"egress\" once the session has touched \"private-data\", \"untrusted-input\", and this session has; it is lifted only in a new session, or by an operator changing the rule or the tool's labels")
	fd.Details = map[string]any{"flow": "no-exfiltration", "origin": "mcpx-policy.yaml:40", "after": []any{"private-data", "untrusted-input"},
		"calls": []any{"egress"}, "then": "deny"}
	add("FlowDenied", slackPost(), deny(t, slackPost(), true, fd))
	fa := reason(decision.FlowNeedsConfirmation,
		"slack.post_message: flow rule \"ask-after-web\" (mcpx-policy.yaml:45) asks before a call to a tool labelled \"egress\" once the session has touched \"untrusted-input\", and this session has")
	fa.Details = map[string]any{"flow": "ask-after-web", "origin": "mcpx-policy.yaml:45", "after": []any{"untrusted-input"},
		"calls": []any{"egress"}, "then": "ask"}
	add("FlowNeedsConfirmation", slackPost(), ask(t, slackPost(), true, fa))

	hidden := decision.Call{Surface: "mcp", Server: "fs", Tool: decision.Tool{Name: "delete_file"},
		Args: map[string]any{"path": "/workspace/notes.md"}}
	add("HiddenTool", hidden, deny(t, hidden, true,
		reason(decision.HiddenTool, `fs.delete_file is hidden by the pattern "delete_*" (servers.fs.hiddenTools)`)))

	w := fsWrite(map[string]any{"path": "/workspace/report.md", "content": "# Q3 report\n"})
	pending := reason(decision.UnknownOutcomePending,
		"fs.write_file: 1 earlier write to fs has an unknown outcome (write_file at 2026-11-29T09:14:03Z, args sha256 9c1d52e1…); clear it with `mcpx-policy writes clear fs --reason '<what you found on the server>'` once checked")
	pending.Details = map[string]any{
		"entries": []any{map[string]any{"id": "01JDX3K8Q2W7RZ5M0N4B6C9V1T", "tool": "write_file",
			"time": "2026-11-29T09:14:03Z", "args_sha256": "9c1d52e1a7c04f3b8e2d6f10b5a9c3e7d4f8a2b6c0e1d3f5a7b9c2e4f6a8b0d1", "surface": "mcp"}},
		"clear": "mcpx-policy writes clear fs --reason '<what you found on the server>'",
	}
	add("UnknownOutcomePending", w, deny(t, w, true, pending))

	add("LedgerUnreadable", w, deny(t, w, true, reason(decision.LedgerUnreadable,
		"fs.write_file: the ledger /var/lib/mcpx-policy/ledger.json cannot be read (version 2 is newer than this build's 1); every write is blocked until an operator repairs it")))

	read := decision.Call{Surface: "mcp", Server: "fs",
		Tool: decision.Tool{Name: "read_file", Annotations: &decision.Annotations{ReadOnlyHint: boolp(true)},
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{
				"path": map[string]any{"type": "string"}, "lines": map[string]any{"type": "integer"},
				"head": map[string]any{"type": "integer"}, "tail": map[string]any{"type": "integer"}}}},
		Args: map[string]any{"path": "/workspace/main.go", "line": 40, "colour": "auto"}}
	unknown := reason(decision.UnknownArguments,
		`fs.read_file: unknown arguments "colour", "line" (did you mean "lines"?); valid arguments: "head", "lines", "path", "tail"; the call was not executed`)
	unknown.Details = unknownDetails()
	d := deny(t, read, false, unknown)
	d.Destructive = false
	add("UnknownArguments", read, d)

	ignored := reason(decision.IgnoredArguments,
		`fs.read_file: unknown arguments "colour", "line" (did you mean "lines"?); valid arguments: "head", "lines", "path", "tail"; the call went ahead and the server ignores them`)
	ignored.Details = unknownDetails()
	add("IgnoredArguments", read, decision.Decision{Outcome: decision.Allow, Reasons: []decision.Reason{},
		Warnings: []decision.Reason{ignored}, Call: ref(t, read)})

	loosened := reason(decision.ConfigLoosened,
		"conf.d/50-dev.yaml:4: servers.fs.exemptArgs[1]: loosened by a later layer: adds \"format\", an argument key the unknown-arguments check never reports")
	loosened.Details = map[string]any{"path": "servers.fs.exemptArgs[1]"}
	add("ConfigLoosened", read, decision.Decision{Outcome: decision.Allow, Reasons: []decision.Reason{},
		Warnings: []decision.Reason{loosened}, Call: ref(t, read)})

	etc := fsWrite(map[string]any{"path": "/etc/passwd", "content": "root::0:0::/root:/bin/sh\n"})
	rule := reason(decision.ArgumentRuleViolation,
		`fs.write_file: /path "/etc/passwd" does not match ^/workspace/ (rule fs-writes-in-workspace, mcpx-policy.yaml:14)`)
	rule.Violations = []decision.Violation{{
		Path: "/path", Value: "/etc/passwd", Constraint: "pattern", Expected: "^/workspace/",
		Rule: decision.RuleRef{ID: "fs-writes-in-workspace", Origin: "mcpx-policy.yaml:14", Description: "writes stay in the workspace"},
	}}
	add("ArgumentRuleViolation", etc, deny(t, etc, true, rule))

	push := decision.Call{Surface: "mcp", Server: "git", Tool: decision.Tool{Name: "git_push"},
		Args: map[string]any{"remote": "origin", "branch": "main", "force": false}}
	add("WriteDenied", push, deny(t, push, true, reason(decision.WriteDenied,
		`git.git_push is a write and writes to "git" are denied (servers.git.writePolicy: deny)`)))

	hp := httpPost()
	add("WriteNeedsConfirmation", hp, ask(t, hp, false, reason(decision.WriteNeedsConfirmation,
		`http.post_json is a write and writes to "http" need confirmation (policy.write: ask)`)))

	sq := sqlExec()
	add("DestructiveNeedsConfirmation", sq, ask(t, sq, true, reason(decision.DestructiveNeedsConfirmation,
		"db.execute_sql is a destructive write (destructiveHint not false) and policy.confirmDestructive is on")))

	pr := decision.Call{Surface: "mcp", Server: "github", Tool: decision.Tool{Name: "merge_pull_request"},
		Args: map[string]any{"owner": "acme", "repo": "billing", "pull_number": 1842, "merge_method": "squash"}}
	od := reason(decision.OverrideDeny, "merges into acme/billing go through the release train, not an agent")
	od.Details = map[string]any{"code": "release-train-only", "repo": "acme/billing"}
	add("OverrideDeny", pr, deny(t, pr, true, od))

	sp := slackPost()
	oa := reason(decision.OverrideAsk, "posting to #general reaches 2,400 people; a person confirms broadcasts")
	oa.Details = map[string]any{"code": "broadcast-channel", "channel": "#general"}
	add("OverrideAsk", sp, ask(t, sp, true, oa))

	bad := decision.Call{Surface: "mcp", Server: "fs", Tool: decision.Tool{Name: "write_file"}, Args: map[string]any{}}
	add("InvalidInput", bad, deny(t, bad, false, reason(decision.InvalidInput,
		`input.mode "sometimes" is not one of allow, ask, deny`)))

	add("PolicyError", w, deny(t, w, true, reason(decision.PolicyError,
		"fs.write_file: the argument rule fs-writes-in-workspace matched but its package mcpx.rules.s_4f1c0a9e27b3d861 is missing")))

	hpAsk := ask(t, hp, false, reason(decision.WriteNeedsConfirmation,
		`http.post_json is a write and writes to "http" need confirmation (policy.write: ask)`))
	add("ConfirmationUnavailable", hp, render.Unavailable(hpAsk))
	add("ConfirmationDeclined", sp, render.Declined(ask(t, sp, true, oa)))

	ok := decision.Call{Surface: "mcp", Server: "fs", Tool: read.Tool, Args: map[string]any{"path": "/workspace/main.go", "lines": 40}}
	add("Allow", ok, decision.Decision{Outcome: decision.Allow, Reasons: []decision.Reason{},
		Warnings: []decision.Reason{}, Call: ref(t, ok)})
	return cs
}
