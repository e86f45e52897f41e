# Tests of the example overrides together with the real policy: each case
# evaluates data.mcpx.decision (all seven steps) with the small compiled
# config of rego/mcpx/testdata (fs: writes allowed, writes stay under
# /workspace/, delete_* hidden; other servers: writes ask). Run with
#   go tool opa test rego/ examples/overrides/
package mcpx.overrides_test

import data.mcpx.testdata

# Pinned clocks (time.now_ns is replaced in every case).
_tuesday_10 := time.parse_rfc3339_ns("2026-12-01T10:00:00+01:00")

_tuesday_20 := time.parse_rfc3339_ns("2026-12-01T20:00:00+01:00")

_saturday_10 := time.parse_rfc3339_ns("2026-12-05T10:00:00+01:00")

_alice := {"id": "alice", "groups": ["maintainers"]}

_bob := {"id": "bob", "groups": ["contractors"]}

_write(server, path, principal) := object.union(
	testdata.call(server, testdata.write_file, {"path": path, "content": "x"}),
	{k: v | some k, v in {"principal": principal}; v != null},
)

_read(path, principal) := object.union(
	testdata.call("fs", testdata.read_file, {"path": path}),
	{"principal": principal},
)

_cases := [
	{
		"name": "maintainer writes in office hours: allowed (fs writes are allow)",
		"input": _write("fs", "/workspace/notes.md", _alice), "now": _tuesday_10,
		"outcome": "allow", "step": "", "codes": [], "override_codes": [],
	},
	{
		"name": "a .git write is denied for everyone, maintainers too",
		"input": _write("fs", "/workspace/.git/config", _alice), "now": _tuesday_10,
		"outcome": "deny", "step": "overrides", "codes": ["OverrideDeny"], "override_codes": ["GitMetadataWrite"],
	},
	{
		"name": "nested repositories and traversal are caught by the .git segment",
		"input": _write("fs", "/workspace/lib/../.git/hooks/pre-commit", _alice), "now": _tuesday_10,
		"outcome": "deny", "step": "overrides", "codes": ["OverrideDeny"], "override_codes": ["GitMetadataWrite"],
	},
	{
		"name": "a file merely named like .git is fine",
		"input": _write("fs", "/workspace/.gitignore", _alice), "now": _tuesday_10,
		"outcome": "allow", "step": "", "codes": [], "override_codes": [],
	},
	{
		"name": "a non-maintainer's write asks",
		"input": _write("fs", "/workspace/notes.md", _bob), "now": _tuesday_10,
		"outcome": "ask", "step": "overrides", "codes": ["OverrideAsk"], "override_codes": ["NotMaintainer"],
	},
	{
		"name": "no principal: not a maintainer, so the write asks",
		"input": _write("fs", "/workspace/notes.md", null), "now": _tuesday_10,
		"outcome": "ask", "step": "overrides", "codes": ["OverrideAsk"], "override_codes": ["NotMaintainer"],
	},
	{
		"name": "a maintainer's write in the evening asks",
		"input": _write("fs", "/workspace/notes.md", _alice), "now": _tuesday_20,
		"outcome": "ask", "step": "overrides", "codes": ["OverrideAsk"], "override_codes": ["OutsideOfficeHours"],
	},
	{
		"name": "a maintainer's write on Saturday asks",
		"input": _write("fs", "/workspace/notes.md", _alice), "now": _saturday_10,
		"outcome": "ask", "step": "overrides", "codes": ["OverrideAsk"], "override_codes": ["OutsideOfficeHours"],
	},
	{
		"name": "both asks are kept as reasons",
		"input": _write("fs", "/workspace/notes.md", _bob), "now": _saturday_10,
		"outcome": "ask", "step": "overrides", "codes": ["OverrideAsk", "OverrideAsk"], "override_codes": ["NotMaintainer", "OutsideOfficeHours"],
	},
	{
		"name": "reads are untouched, whoever asks and whenever",
		"input": _read("/workspace/.git/config", _bob), "now": _saturday_10,
		"outcome": "allow", "step": "", "codes": [], "override_codes": [],
	},
	{
		"name": "the deny wins over an earlier step's ask, and that ask is kept",
		"input": _write("other", "/workspace/.git/config", _alice), "now": _tuesday_10,
		"outcome": "deny", "step": "overrides", "codes": ["WriteNeedsConfirmation", "OverrideDeny"], "override_codes": ["GitMetadataWrite"],
	},
	{
		"name": "an earlier step's deny decides; the override's finding is still reported",
		"input": _write("fs", "/etc/.git/config", _alice), "now": _tuesday_10,
		"outcome": "deny", "step": "argument_rules", "codes": ["ArgumentRuleViolation", "OverrideDeny"], "override_codes": ["GitMetadataWrite"],
	},
	{
		"name": "a hidden tool short-circuits: overrides are not even reported",
		"input": object.union(_write("fs", "/workspace/.git/config", _bob), {"tool": {"name": "delete_file"}}), "now": _saturday_10,
		"outcome": "deny", "step": "hidden", "codes": ["HiddenTool"], "override_codes": [],
	},
]

test_overrides_with_the_real_policy if {
	every c in _cases {
		d := data.mcpx.decision with input as c.input
			with data.mcpx.config as testdata.config
			with time.now_ns as c.now
		print(c.name, d.outcome, d.step, d.reasons)
		d.outcome == c.outcome
		d.step == c.step
		[r.code | some r in d.reasons] == c.codes
		sort([r.details.override_code | some r in d.reasons; r.step == "overrides"]) == c.override_codes
	}
}

test_deny_finding_carries_details_and_message if {
	d := data.mcpx.decision with input as _write("fs", "/workspace/.git/config", _alice)
		with data.mcpx.config as testdata.config
		with time.now_ns as _tuesday_10
	d.reasons == [{
		"code": "OverrideDeny",
		"step": "overrides",
		"message": `fs.write_file would write "/workspace/.git/config" (argument path) inside a .git directory; repository metadata is changed only by git itself`,
		"details": {"override_code": "GitMetadataWrite", "argument": "path", "path": "/workspace/.git/config"},
	}]
}

test_ask_message_names_the_principal if {
	d := data.mcpx.decision with input as _write("fs", "/workspace/notes.md", _bob)
		with data.mcpx.config as testdata.config
		with time.now_ns as _tuesday_10
	[r.message | some r in d.reasons] == ["fs.write_file is a write by principal \"bob\", who is not in group maintainers; a person confirms writes by non-maintainers"]
	[r.details | some r in d.reasons] == [{"override_code": "NotMaintainer", "group": "maintainers"}]
}

# writeTools makes a tool with readOnlyHint true count as a write; the
# overrides use the policy's own classification (data.mcpx.lib.call.write),
# so they follow it.
test_overrides_follow_write_tools if {
	status := {"name": "git_status", "annotations": {"readOnlyHint": true}}
	doc := object.union(testdata.call("git", status, {"path": "/workspace/.git"}), {"mode": "allow"})
	d := data.mcpx.decision with input as doc
		with data.mcpx.config as testdata.config
		with time.now_ns as _tuesday_10
	d.outcome == "deny"
	sort([r.details.override_code | some r in d.reasons]) == ["GitMetadataWrite", "NotMaintainer"]
}
