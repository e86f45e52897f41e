package mcpx.steps.write_mode_test

import data.mcpx.steps.write_mode
import data.mcpx.testdata

# server, caller mode (or null), readOnlyHint, writeTools → deny codes, ask codes
_cases := [
	{"server": "fs", "mode": null, "tool": testdata.write_file, "deny": [], "ask": []},
	{"server": "other", "mode": null, "tool": testdata.write_file, "deny": [], "ask": ["WriteNeedsConfirmation"]},
	{"server": "fs", "mode": "deny", "tool": testdata.write_file, "deny": ["WriteDenied"], "ask": []},
	{"server": "fs", "mode": "ask", "tool": testdata.write_file, "deny": [], "ask": ["WriteNeedsConfirmation"]},
	# the input's mode only tightens: allow under a configured ask stays ask
	{"server": "other", "mode": "allow", "tool": testdata.write_file, "deny": [], "ask": ["WriteNeedsConfirmation"]},
	{"server": "other", "mode": "deny", "tool": testdata.read_file, "deny": [], "ask": []},
	{"server": "other", "mode": null, "tool": {"name": "no_hints"}, "deny": [], "ask": ["WriteNeedsConfirmation"]},
	# annotations say read-only, but an operator's writeTools pattern wins
	{"server": "git", "mode": "deny", "tool": {"name": "git_status", "annotations": {"readOnlyHint": true}}, "deny": ["WriteDenied"], "ask": []},
	{"server": "other", "mode": "deny", "tool": {"name": "exec_cmd", "annotations": {"readOnlyHint": true}}, "deny": ["WriteDenied"], "ask": []},
]

test_write_modes if {
	every c in _cases {
		doc := object.union(testdata.call(c.server, c.tool, {}), {k: v | some k, v in {"mode": c.mode}; v != null})
		d := write_mode.deny with input as doc with data.mcpx.config as testdata.config
		a := write_mode.ask with input as doc with data.mcpx.config as testdata.config
		print(c.server, c.mode, c.tool.name, d, a)
		[r.code | some r in d] == c.deny
		[r.code | some r in a] == c.ask
	}
}

test_policy_write_is_default_for_unconfigured_servers if {
	cfg := object.union(testdata.config, {"write": "deny"})
	d := write_mode.deny with input as testdata.call("other", testdata.write_file, {}) with data.mcpx.config as cfg
	[r.message | some r in d] == ["other.write_file is a write and writes to other are denied (write mode deny)"]
}

test_no_config_write_defaults_to_ask if {
	cfg := object.remove(testdata.config, ["write"])
	a := write_mode.ask with input as testdata.call("other", testdata.write_file, {}) with data.mcpx.config as cfg
	count(a) == 1
}

# The effective mode is the stricter of the configured one and the input's:
# configured (writePolicy) × input mode (null: none) → effective.
_tighten_cases := [
	{"configured": "allow", "input": null, "effective": "allow"},
	{"configured": "allow", "input": "allow", "effective": "allow"},
	{"configured": "allow", "input": "ask", "effective": "ask"},
	{"configured": "allow", "input": "deny", "effective": "deny"},
	{"configured": "ask", "input": null, "effective": "ask"},
	{"configured": "ask", "input": "allow", "effective": "ask"},
	{"configured": "ask", "input": "ask", "effective": "ask"},
	{"configured": "ask", "input": "deny", "effective": "deny"},
	{"configured": "deny", "input": null, "effective": "deny"},
	{"configured": "deny", "input": "allow", "effective": "deny"},
	{"configured": "deny", "input": "ask", "effective": "deny"},
	{"configured": "deny", "input": "deny", "effective": "deny"},
]

_codes := {"allow": [[], []], "ask": [[], ["WriteNeedsConfirmation"]], "deny": [["WriteDenied"], []]}

test_input_mode_only_tightens if {
	every c in _tighten_cases {
		cfg := object.union(testdata.config, {"servers": {"fs": {"write": c.configured}}})
		doc := object.union(testdata.call("fs", testdata.write_file, {}), {k: v | some k, v in {"mode": c.input}; v != null})
		d := write_mode.deny with input as doc with data.mcpx.config as cfg
		a := write_mode.ask with input as doc with data.mcpx.config as cfg
		print(c, d, a)
		[[r.code | some r in d], [r.code | some r in a]] == _codes[c.effective]
	}
}

# policy.write is the configured mode of a server without writePolicy, and
# the input's allow does not loosen it either.
test_input_allow_does_not_loosen_policy_write if {
	cfg := object.union(testdata.config, {"write": "deny"})
	doc := object.union(testdata.call("other", testdata.write_file, {}), {"mode": "allow"})
	d := write_mode.deny with input as doc with data.mcpx.config as cfg
	[r.code | some r in d] == ["WriteDenied"]
}
