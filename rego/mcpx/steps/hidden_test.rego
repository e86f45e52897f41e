package mcpx.steps.hidden_test

import data.mcpx.steps.hidden
import data.mcpx.testdata

_cases := [
	{"server": "fs", "tool": "delete_file", "hidden": true},
	{"server": "fs", "tool": "delete_", "hidden": true},
	{"server": "fs", "tool": "xdelete_file", "hidden": false},
	{"server": "git", "tool": "delete_file", "hidden": false},
	{"server": "git", "tool": "shutdown", "hidden": true},
	{"server": "unknown", "tool": "shutdown", "hidden": true},
	{"server": "fs", "tool": "shutdown_now", "hidden": false},
]

test_hidden_patterns if {
	every c in _cases {
		got := hidden.applies with input as testdata.call(c.server, {"name": c.tool}, {})
			with data.mcpx.config as testdata.config
		print(c, got)
		got == c.hidden
	}
}

test_hidden_message_names_tool_and_server if {
	r := hidden.deny with input as testdata.call("fs", {"name": "delete_file"}, {})
		with data.mcpx.config as testdata.config
	r == {{"code": "HiddenTool", "step": "hidden", "message": `tool "delete_file" on "fs" is hidden by its hiddenTools configuration`}}
}
