# METADATA
# title: Test fixtures
# description: |
#   A compiled config (the shape internal/config produces, ADR 0001) and two
#   hand-written rule packages standing in for generated ones. Not shipped in
#   bundles.
package mcpx.testdata

config := {
	"write": "ask",
	"confirmDestructive": false,
	"unknownArgs": "warn",
	"exemptArgs": ["cursor"],
	"pool": {
		"hidden": {"exact": {"shutdown": ["shutdown"]}, "regex": []},
		"writeTools": {"exact": {}, "regex": [{"source": "/^exec/", "re": "^exec", "values": ["/^exec/"]}]},
		"rules": {"exact": {}, "regex": []},
		"unknownArgsTools": [{"source": "search_*", "re": "^search_.*$", "mode": "off"}],
	},
	"servers": {
		"fs": {
			"write": "allow",
			"unknownArgs": "reject",
			"exemptArgs": ["max_bytes"],
			"hidden": {"exact": {}, "regex": [{"source": "delete_*", "re": "^delete_.*$", "values": ["delete_*"]}]},
			"writeTools": {"exact": {}, "regex": []},
			"rules": {
				"exact": {"write_file": ["fs-writes-in-workspace"], "edit_file": ["fs-writes-in-workspace"]},
				"regex": [{"source": "/^move_/", "re": "^move_", "values": ["fs-writes-in-workspace"]}],
			},
			"unknownArgsTools": [],
		},
		"git": {
			"hidden": {"exact": {}, "regex": []},
			"writeTools": {"exact": {"git_status": ["git_status"]}, "regex": []},
			"rules": {"exact": {"git_push": ["no-force-push"]}, "regex": []},
			"unknownArgsTools": [],
			"exemptArgs": [],
		},
	},
	"rules": {
		"fs-writes-in-workspace": {
			"id": "fs-writes-in-workspace",
			"origin": "mcpx-policy.yaml:14",
			"description": "writes stay in the workspace",
			"argument": [],
			"paths": [[]],
			"pointer": "",
			"required": false,
			"package": "test_workspace",
		},
		"no-force-push": {
			"id": "no-force-push",
			"origin": "mcpx-policy.yaml:22",
			"description": "never force-push",
			"argument": ["force"],
			"paths": [["force"]],
			"pointer": "/force",
			"required": false,
			"package": "test_const_false",
		},
	},
}

read_file := {
	"name": "read_file",
	"annotations": {"readOnlyHint": true},
	"inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}, "tail": {"type": "integer"}}},
}

write_file := {
	"name": "write_file",
	"annotations": {"readOnlyHint": false, "destructiveHint": true},
	"inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
}

git_push := {
	"name": "git_push",
	"annotations": {"readOnlyHint": false, "destructiveHint": false},
	"inputSchema": {"type": "object", "properties": {"remote": {"type": "string"}, "branch": {"type": "string"}, "force": {"type": "boolean"}}},
}

call(server, tool, args) := {"surface": "cli", "server": server, "tool": tool, "args": args}
