package mcpx.steps.unknown_args_test

import data.mcpx.steps.unknown_args
import data.mcpx.testdata

_tool(schema) := {"name": "read_file", "annotations": {"readOnlyHint": true}, "inputSchema": schema}

_props := {"path": {"type": "string"}, "lines": {"type": "integer"}, "tail": {"type": "integer"}}

_closed := {"type": "object", "properties": _props}

# Which keys are unknown for which schema.
_cases := [
	{"schema": _closed, "args": {"path": "a", "line": 1}, "unknown": ["/line"]},
	{"schema": _closed, "args": {"path": "a"}, "unknown": []},
	{"schema": object.union(_closed, {"additionalProperties": false}), "args": {"x": 1}, "unknown": ["/x"]},
	{"schema": object.union(_closed, {"additionalProperties": true}), "args": {"x": 1}, "unknown": []},
	{"schema": object.union(_closed, {"additionalProperties": {"type": "string"}}), "args": {"x": 1}, "unknown": []},
	{"schema": object.union(_closed, {"patternProperties": {"^x": {}}}), "args": {"x": 1}, "unknown": []},
	{"schema": {"$ref": "#/$defs/a"}, "args": {"x": 1}, "unknown": []},
	{"schema": {"type": "object"}, "args": {"x": 1}, "unknown": ["/x"]},
	# exemptArgs: cursor is global, max_bytes is fs's
	{"schema": _closed, "args": {"cursor": "c", "max_bytes": 3}, "unknown": []},
	# nested closed objects are checked, with their path
	{
		"schema": {"type": "object", "properties": {"opts": {"type": "object", "properties": {"force": {"type": "boolean"}}}}},
		"args": {"opts": {"forse": true}}, "unknown": ["/opts/forse"],
	},
	# nested objects without declared properties are free-form
	{"schema": {"type": "object", "properties": {"env": {"type": "object"}}}, "args": {"env": {"A": "1"}}, "unknown": []},
	# arrays of closed objects
	{
		"schema": {"type": "object", "properties": {"edits": {"type": "array", "items": {"type": "object", "properties": {"old": {}, "new": {}}}}}},
		"args": {"edits": [{"old": "a", "new": "b"}, {"old": "a", "neww": "b"}]}, "unknown": ["/edits/1/neww"],
	},
	# keys declared in combinator branches count as declared
	{"schema": {"type": "object", "anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]}, "args": {"a": 1, "b": 2, "c": 3}, "unknown": ["/c"]},
	{"schema": {"type": "object", "anyOf": [{"properties": {"a": {}}}, {"additionalProperties": true}]}, "args": {"c": 3}, "unknown": []},
]

test_unknown_keys if {
	every c in _cases {
		got := unknown_args.unknown with input as testdata.call("fs", _tool(c.schema), c.args) with data.mcpx.config as testdata.config
		print(c.args, got)
		[u.path | some u in got] == c.unknown
	}
}

test_server_exempt_args_apply_to_that_server_only if {
	got := unknown_args.unknown with input as testdata.call("git", _tool(_closed), {"cursor": "c", "max_bytes": 3}) with data.mcpx.config as testdata.config
	[u.path | some u in got] == ["/max_bytes"]
}

test_no_schema_nothing_unknown if {
	got := unknown_args.unknown with input as testdata.call("fs", {"name": "x"}, {"a": 1}) with data.mcpx.config as testdata.config
	got == []
}

# Mode resolution: fs rejects, the global default warns, search_* is off
# for every server through the pool's tool patterns.
_mode_cases := [
	{"server": "fs", "tool": "read_file", "deny": 1, "warn": 0},
	{"server": "git", "tool": "read_file", "deny": 0, "warn": 1},
	{"server": "fs", "tool": "search_files", "deny": 0, "warn": 0},
]

test_modes if {
	every c in _mode_cases {
		doc := testdata.call(c.server, object.union(_tool(_closed), {"name": c.tool}), {"line": 1})
		d := unknown_args.deny with input as doc with data.mcpx.config as testdata.config
		w := unknown_args.warn with input as doc with data.mcpx.config as testdata.config
		print(c, count(d), count(w))
		count(d) == c.deny
		count(w) == c.warn
	}
}

test_server_tool_pattern_beats_pool_and_last_match_wins if {
	cfg := json.patch(testdata.config, [{"op": "replace", "path": "/servers/fs/unknownArgsTools", "value": [
		{"source": "search_*", "re": "^search_.*$", "mode": "reject"},
		{"source": "search_files", "re": "^search_files$", "mode": "warn"},
	]}])
	doc := testdata.call("fs", object.union(_tool(_closed), {"name": "search_files"}), {"line": 1})
	w := unknown_args.warn with input as doc with data.mcpx.config as cfg
	count(w) == 1
}

test_reject_message if {
	d := unknown_args.deny with input as testdata.call("fs", _tool(_closed), {"path": "a", "line": 1}) with data.mcpx.config as testdata.config
	[r.message | some r in d] == [`fs.read_file: unknown argument "line" (did you mean "lines"?); valid arguments: "lines", "path", "tail"; the call was not executed`]
	[r.details | some r in d] == [{"unknown": [{"path": "/line", "key": "line", "suggestion": "lines"}], "more": 0, "valid": ["lines", "path", "tail"]}]
}

test_warn_message if {
	w := unknown_args.warn with input as testdata.call("git", _tool(_closed), {"tial": 1}) with data.mcpx.config as testdata.config
	print(w)
	[r.message | some r in w] == [`git.read_file: unknown argument "tial" (did you mean "tail"?); valid arguments: "lines", "path", "tail"; the call went ahead without them being checked`]
}

test_echo_is_capped_at_five_keys_of_80_characters if {
	long := concat("", [x | some _ in numbers.range(1, 100); x := "k"])
	args := {"a1": 1, "a2": 2, "a3": 3, "a4": 4, "a5": 5, "a6": 6, "a7": 7, long: 8}
	d := unknown_args.deny with input as testdata.call("fs", _tool(_closed), args) with data.mcpx.config as testdata.config
	some r in d
	contains(r.message, `unknown arguments "a1", "a2", "a3", "a4", "a5" and 3 more;`)
	not contains(r.message, long)
	r.details.more == 3
	count(r.details.unknown) == 5
}

test_nested_message_names_parent if {
	schema := {"type": "object", "properties": {"opts": {"type": "object", "properties": {"force": {"type": "boolean"}}}}}
	d := unknown_args.deny with input as testdata.call("fs", _tool(schema), {"opts": {"forse": true}}) with data.mcpx.config as testdata.config
	[r.message | some r in d] == [`fs.read_file: unknown key in /opts "forse" (did you mean "force"?); valid keys in /opts: "force"; the call was not executed`]
}

test_off_mode_reports_nothing if {
	cfg := object.union(testdata.config, {"servers": {"fs": object.union(testdata.config.servers.fs, {"unknownArgs": "off"})}})
	doc := testdata.call("fs", _tool(_closed), {"x": 1})
	count(unknown_args.deny) + count(unknown_args.warn) == 0 with input as doc with data.mcpx.config as cfg
}

# The shortcut (_none) may only say "nothing unknown" when the full check
# agrees; these cases sit on its edges: exempt keys, closed and open nested
# objects, arrays, a nested "properties" key and declared-but-false schemas.
_edge_schema := {"type": "object", "additionalProperties": false, "properties": {
	"path": {"type": "string"},
	"opts": {"type": "object", "properties": {"force": {"type": "boolean"}}},
	"deep": {"type": "object", "properties": {"inner": {"type": "object", "properties": {"a": {}}}}},
	"free": {"type": "object", "additionalProperties": true},
	"list": {"type": "array", "items": {"type": "object", "properties": {"a": {}}}},
	"tags": {"type": "array", "items": {"type": "string"}},
	"no": false,
}}

_edge_args := [
	{"path": "a"},
	{"path": "a", "cursor": "c"},
	{"path": "a", "cursor": {"x": 1}},
	{"opts": {"force": true}},
	{"opts": {"forse": true}},
	{"opts": {"force": {"x": 1}}},
	{"opts": {"cursor": 1}},
	{"deep": {"inner": {"a": 1}}},
	{"deep": {"inner": {"b": 1}}},
	{"free": {"anything": {"x": 1}}},
	{"list": [{"a": 1}]},
	{"list": [{"b": 1}]},
	{"list": [1, "x"]},
	{"tags": ["a", "b"]},
	{"no": 1},
	{"nope": 1},
]

test_shortcut_agrees_with_full_check if {
	shortcuts := [c.args |
		some c in array.concat([{"schema": _edge_schema, "args": a} | some a in _edge_args], _cases)
		doc := testdata.call("fs", _tool(c.schema), c.args)
		unknown_args._none with input as doc with data.mcpx.config as testdata.config
		count(unknown_args._unknown) > 0 with input as doc with data.mcpx.config as testdata.config
	]
	shortcuts == []
	taken := [1 |
		some a in _edge_args
		unknown_args._none with input as testdata.call("fs", _tool(_edge_schema), a) with data.mcpx.config as testdata.config
	]
	count(taken) == 6
}
