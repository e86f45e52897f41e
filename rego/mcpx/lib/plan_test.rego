package mcpx.lib.plan_test

import data.mcpx
import data.mcpx.lib.plan
import data.mcpx.testdata

_tools := [
	testdata.read_file,
	testdata.write_file,
	testdata.git_push,
	{"name": "no_hints"},
	{"name": "edit_file", "annotations": {"readOnlyHint": false, "destructiveHint": false}},
	{"name": "exec_cmd", "annotations": {"readOnlyHint": true}},
	{"name": "git_status", "annotations": {"readOnlyHint": true}},
	{"name": "delete_file"},
	{"name": "shutdown", "annotations": {"readOnlyHint": true}},
]

_modes := [null, "ask", "allow", "deny"]

# _case is one call of the grid: a server, a tool, the caller's mode (or
# none) and arguments every step accepts.
_case(server, tool, mode) := object.union(testdata.call(server, tool, {}), {k: v | some k, v in {"mode": mode}; v != null})

_full(x, cfg) := d if {
	d := mcpx._full with input as x with data.mcpx.config as cfg with data.mcpx.overrides.deny as set() with data.mcpx.overrides.ask as set()
}

_decision(x, cfg) := d if {
	d := mcpx.decision with input as x with data.mcpx.config as cfg with data.mcpx.overrides.deny as set() with data.mcpx.overrides.ask as set()
}

_planned(x, cfg) := object.union(d, {"call": {"server": x.server, "tool": x.tool.name, "sha256": ""}}) if {
	d := plan.document(
		x.server, x.tool.name, object.get(x, "mode", null),
		object.get(x.tool, ["annotations", "readOnlyHint"], false),
		object.get(x.tool, ["annotations", "destructiveHint"], true),
	) with data.mcpx.config as cfg
}

_planned_hidden(x, cfg) := object.union(d, {"call": {"server": x.server, "tool": x.tool.name, "sha256": ""}}) if {
	d := plan.hidden_document(x.server, x.tool.name) with data.mcpx.config as cfg
}

_plan_of(x, cfg) := p if {
	p := _planned(x, cfg)
} else := p if {
	p := _planned_hidden(x, cfg)
}

# _grid checks, on a config and a server, every planned document against
# the decision the full check order builds for the same call (every kind
# of tool: read, write, destructive or not, write by pattern, hidden by
# the pool or by the server; every caller mode). It returns the outcomes
# and steps reached. (Split by server and config so that each test stays
# well within opa test's time limit on a loaded machine.)
_grid(cfg, server) := {[r.full.outcome, r.full.step] | some r in results} if {
	results := [r |
		some tool in _tools
		some mode in _modes
		x := _case(server, tool, mode)
		r := {"planned": _plan_of(x, cfg), "full": _full(x, cfg)}
	]
	count(results) == count(_tools) * count(_modes)
	every r in results {
		_same(r.planned, r.full)
	}
}

_same(a, b) if a == b

_same(a, b) if {
	a != b
	print("differ:", a, b)
	false # regal ignore:constant-condition
}

# fs: writePolicy allow, a hidden glob, unknownArgs reject.
test_plans_equal_the_steps_fs if {
	_grid(testdata.config, "fs") == {["allow", ""], ["ask", "write_mode"], ["deny", "write_mode"], ["deny", "hidden"]}
}

# git: a writeTools exact name; the default write mode (ask).
test_plans_equal_the_steps_git if {
	_grid(testdata.config, "git") == {["allow", ""], ["ask", "write_mode"], ["deny", "write_mode"], ["deny", "hidden"]}
}

test_plans_equal_the_steps_destructive_floor if {
	cfg := object.union(testdata.config, {"confirmDestructive": true})
	_grid(cfg, "fs") == {["allow", ""], ["ask", "write_mode"], ["ask", "destructive_floor"], ["deny", "write_mode"], ["deny", "hidden"]}
}

test_plans_equal_the_steps_policy_deny if {
	cfg := object.union(testdata.config, {"write": "deny", "confirmDestructive": true})
	_grid(cfg, "other") == {["allow", ""], ["deny", "write_mode"], ["deny", "hidden"]}
}

test_plans_equal_the_steps_policy_allow if {
	cfg := object.union(testdata.config, {"write": "allow", "confirmDestructive": true})
	_grid(cfg, "other") == {["allow", ""], ["ask", "write_mode"], ["ask", "destructive_floor"], ["deny", "write_mode"], ["deny", "hidden"]}
}

# The decision takes the planned documents: it equals them on a sample.
test_decision_is_the_plan if {
	every tool in _tools {
		x := _case("other", tool, "ask")
		_same(_decision(x, testdata.config), _plan_of(x, testdata.config))
	}
}

# A tool the config cannot decide has no planned document: the full order
# decides (a PolicyError), and for a hidden tool too, since a config
# problem comes first.
test_no_plan_when_the_config_is_unusable if {
	bad_mode := object.union(testdata.config, {"servers": object.union(testdata.config.servers, {"fs": object.union(testdata.config.servers.fs, {"write": "sometimes"})})})
	x := _case("fs", testdata.write_file, null)
	not _planned(x, bad_mode)
	_full(x, bad_mode).reasons[0].code == "PolicyError"
	_decision(x, bad_mode) == _full(x, bad_mode)
	h := _case("fs", {"name": "delete_file"}, null)
	not _planned_hidden(h, bad_mode)
	_decision(h, bad_mode) == _full(h, bad_mode)
}

test_no_plan_for_a_missing_rule if {
	cfg := object.union(object.remove(testdata.config, ["rules"]), {"rules": object.remove(testdata.config.rules, ["fs-writes-in-workspace"])})
	x := _case("fs", testdata.write_file, null)
	not _planned(x, cfg)
	_full(x, cfg).reasons[0].code == "PolicyError"
	_decision(x, cfg) == _full(x, cfg)
}

test_no_plan_without_a_config if {
	not plan.document("fs", "write_file", null, false, true) with data.mcpx.config as null
	not plan.hidden_document("fs", "delete_file") with data.mcpx.config as null
	x := _case("fs", testdata.write_file, null)
	_decision(x, null).reasons[0].code == "PolicyError"
}
