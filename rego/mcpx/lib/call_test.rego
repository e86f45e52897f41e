package mcpx.lib.call_test

import data.mcpx.lib.call
import data.mcpx.testdata

# server, tool → write, destructive (fixtures: pool writeTools /^exec/,
# git writeTools git_status)
_cases := [
	{"server": "fs", "tool": testdata.read_file, "write": false, "destructive": false},
	{"server": "fs", "tool": testdata.write_file, "write": true, "destructive": true},
	{"server": "git", "tool": testdata.git_push, "write": true, "destructive": false},
	{"server": "fs", "tool": {"name": "no_hints"}, "write": true, "destructive": true},
	{"server": "git", "tool": {"name": "git_status", "annotations": {"readOnlyHint": true}}, "write": true, "destructive": true},
	{"server": "fs", "tool": {"name": "git_status", "annotations": {"readOnlyHint": true}}, "write": false, "destructive": false},
	{"server": "any", "tool": {"name": "exec_sql", "annotations": {"readOnlyHint": true, "destructiveHint": false}}, "write": true, "destructive": false},
]

test_classification if {
	every c in _cases {
		doc := testdata.call(c.server, c.tool, {})
		w := call.write with input as doc with data.mcpx.config as testdata.config
		d := call.destructive with input as doc with data.mcpx.config as testdata.config
		print(c.server, c.tool.name, w, d)
		w == c.write
		d == c.destructive
	}
}

test_label if {
	call.label == "fs.read_file" with input as testdata.call("fs", testdata.read_file, {}) with data.mcpx.config as testdata.config
}
