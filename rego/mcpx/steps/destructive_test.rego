package mcpx.steps.destructive_test

import data.mcpx.steps.destructive
import data.mcpx.testdata

_floor := object.union(testdata.config, {"confirmDestructive": true})

_cases := [
	# fs writes are allowed; destructive writes still ask under the floor
	{"config": _floor, "server": "fs", "tool": testdata.write_file, "mode": null, "ask": true},
	# destructiveHint absent takes the MCP default: destructive
	{"config": _floor, "server": "fs", "tool": {"name": "frob"}, "mode": null, "ask": true},
	{"config": _floor, "server": "fs", "tool": {"name": "frob", "annotations": {"destructiveHint": false}}, "mode": null, "ask": false},
	{"config": _floor, "server": "fs", "tool": testdata.read_file, "mode": null, "ask": false},
	{"config": _floor, "server": "fs", "tool": testdata.write_file, "mode": "deny", "ask": false},
	{"config": testdata.config, "server": "fs", "tool": testdata.write_file, "mode": null, "ask": false},
]

test_destructive_floor if {
	every c in _cases {
		doc := object.union(testdata.call(c.server, c.tool, {}), {k: v | some k, v in {"mode": c.mode}; v != null})
		a := destructive.ask with input as doc with data.mcpx.config as c.config
		print(c.tool.name, c.mode, a)
		count(a) == 1 == c.ask
	}
}

test_floor_never_loosens_a_deny if {
	d := data.mcpx.decision with input as object.union(testdata.call("fs", testdata.write_file, {"path": "/workspace/a"}), {"mode": "deny"})
		with data.mcpx.config as _floor with data.mcpx.overrides.deny as set() with data.mcpx.overrides.ask as set()
	d.outcome == "deny"
	[r.code | some r in d.reasons] == ["WriteDenied"]
}
