package mcpx.lib.req_test

import data.mcpx.lib.predicates
import data.mcpx.lib.req

_ok := {"server": "fs", "tool": {"name": "t"}, "args": {}}

_sha := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

_cases := [
	{"input": _ok, "problems": set()},
	{"input": {"tool": {"name": "t"}}, "problems": {"server must be a non-empty string"}},
	{"input": {"server": "", "tool": {"name": "t"}}, "problems": {"server must be a non-empty string"}},
	{"input": {"server": "fs", "tool": "t"}, "problems": {"tool must be an object (an MCP Tool with name, annotations, inputSchema)"}},
	{"input": {"server": "fs", "tool": {}}, "problems": {"tool.name must be a non-empty string"}},
	{"input": object.union(_ok, {"args": []}), "problems": {"args must be an object"}},
	{"input": object.union(_ok, {"args": null}), "problems": {"args must be an object"}},
	{"input": object.union(_ok, {"mode": "yolo"}), "problems": {`mode "yolo" is not a write mode (want ask, allow or deny)`}},
	{"input": object.union(_ok, {"ledger": []}), "problems": {"ledger must be an object"}},
	{"input": object.union(_ok, {"ledger": {"entries": {}}}), "problems": {"ledger.entries must be an array of objects"}},
	{"input": object.union(_ok, {"ledger": {"entries": [1]}}), "problems": {"ledger.entries must be an array of objects"}},
	{"input": object.union(_ok, {"ledger": {"entries": [], "total": -1}}), "problems": {"ledger.total must be a non-negative integer"}},
	{"input": object.union(_ok, {"ledger": {"entries": [], "total": 1.5}}), "problems": {"ledger.total must be a non-negative integer"}},
	{"input": object.union(_ok, {"ledger": {"entries": [], "total": "3"}}), "problems": {"ledger.total must be a non-negative integer"}},
	{"input": object.union(_ok, {"ledger": {"entries": [], "total": 3}}), "problems": set()},
	{"input": object.union(_ok, {"principal": "root"}), "problems": {"principal must be an object"}},
	{"input": object.union(_ok, {"surface": 1}), "problems": {"surface must be a string"}},
	{"input": object.union(_ok, {"call_sha256": "ABC"}), "problems": {"call_sha256 must be a lowercase hex SHA-256 (64 characters 0-9a-f)"}},
	{"input": object.union(_ok, {"call_sha256": 1}), "problems": {"call_sha256 must be a lowercase hex SHA-256 (64 characters 0-9a-f)"}},
	{"input": object.union(_ok, {"call_sha256": _sha}), "problems": set()},
	{"input": {"server": "fs", "tool": {"name": "t", "annotations": []}}, "problems": {"tool.annotations must be an object"}},
	{"input": {"server": "fs", "tool": {"name": "t", "inputSchema": true}}, "problems": {"tool.inputSchema must be an object"}},
	{"input": {"server": "fs", "tool": {"name": "t", "annotations": {"destructiveHint": 0}}}, "problems": {"tool.annotations.destructiveHint must be a boolean"}},
	{"input": [], "problems": {"input must be an object", "server must be a non-empty string", "tool must be an object (an MCP Tool with name, annotations, inputSchema)"}},
]

test_problems if {
	every c in _cases {
		got := req.problems with input as c.input
		print(c.input, got)
		got == c.problems
	}
}

test_defaults if {
	req.doc.args == {} with input as {"server": "fs", "tool": {"name": "t"}}
	req.doc.read_only == false with input as {"server": "fs", "tool": {"name": "t"}}
	req.doc.destructive == true with input as {"server": "fs", "tool": {"name": "t"}}
	req.doc.destructive == false with input as {"server": "fs", "tool": {"name": "t", "annotations": {"destructiveHint": false}}}
	req.doc.has_schema == false with input as {"server": "fs", "tool": {"name": "t"}}
	req.doc.ledger_error == null with input as {"server": "fs", "tool": {"name": "t"}}
	req.doc.ledger_total == 0 with input as {"server": "fs", "tool": {"name": "t"}}
	req.doc.ledger_total == 2 with input as object.union(_ok, {"ledger": {"entries": [{"server": "fs"}, {"server": "fs"}, {"server": "git"}]}})
	req.doc.ledger_total == 2 with input as object.union(_ok, {"ledger": {"entries": [{"server": "fs"}, {"server": "fs"}], "total": 1}})
	req.doc.ledger_total == 100000 with input as object.union(_ok, {"ledger": {"entries": [{"server": "fs"}], "total": 100000}})
	req.doc.call_sha256 == "" with input as {"server": "fs", "tool": {"name": "t"}}
	req.doc.call_sha256 == _sha with input as object.union(_ok, {"call_sha256": _sha})
}

# well_shaped may only take a call the full checks accept; and for a call with
# no problem, every value doc hands the steps must equal the full path's.
_fast_cases := [
	_ok,
	object.union(_ok, {"call_sha256": _sha, "mode": "deny", "surface": "mcp", "principal": {"id": "p"}}),
	object.union(_ok, {"ledger": {"entries": [{"server": "fs", "id": "1"}, {"server": "git"}], "error": "disk"}}),
	object.union(_ok, {"ledger": {"entries": [{"server": "fs", "id": "1"}], "total": 100000}}),
	object.union(_ok, {"ledger": {"entries": [{"server": "fs", "id": "1"}, {"server": "fs", "id": "2"}], "total": 1}}),
	object.union(_ok, {"ledger": {"entries": [], "total": "x"}}),
	object.union(_ok, {"tool": {"name": "t", "annotations": {"readOnlyHint": false, "destructiveHint": false}, "inputSchema": {"type": "object"}}}),
	object.union(_ok, {"tool": {"name": "t", "inputSchema": null}}),
	object.union(_ok, {"call_sha256": null}),
	object.union(_ok, {"call_sha256": ""}),
	object.union(_ok, {"tool": {"name": "t", "annotations": []}}),
	object.union(_ok, {"ledger": {"entries": "x"}}),
	object.union(_ok, {"ledger": []}),
	object.union(_ok, {"mode": null}),
]

test_fast_path_agrees_with_full_checks if {
	every c in array.concat(_fast_cases, [x.input | some x in _cases]) {
		_agrees(c)
		_call_agrees(c)
	}
	taken := [1 | some c in _fast_cases; req.well_shaped with input as c]
	count(taken) == 7
	direct := [1 | some c in _fast_cases; predicates.well_formed with input as c]
	count(direct) == 7
}

_agrees(c) if {
	not req.well_shaped with input as c
	not predicates.well_formed with input as c
}

_agrees(c) if {
	req.well_shaped with input as c
	count(req._problems) == 0 with input as c
	_doc_agrees(c)
}

_doc_agrees(c) if {
	not predicates.well_formed with input as c
	_call_agrees(c)
}

_doc_agrees(c) if {
	predicates.well_formed with input as c
	direct := req.doc with input as c
	full := req.doc with input as c with predicates.well_formed as false
	direct == full
	_call_agrees(c)
	full_call := req.call with input as c with predicates.well_formed as false
	full_call == req.call with input as c
}

# req.call is doc's server, tool, args, schema and has_schema, whichever
# way each is built.
_call_agrees(c) if {
	d := req.doc with input as c
	req.call with input as c == {k: d[k] | some k in ["server", "tool", "args", "schema", "has_schema"]}
}

# Numbers a reader using doubles (most MCP servers) reads as written pass;
# the others are named with their argument path and what they read as.
_read_as(ptr, num, read) := sprintf("args %s: the number %s reads as %s in a double (how most MCP servers parse JSON): the server would act on a value the policy did not judge", [ptr, num, read])

_beyond(ptr, num) := sprintf("args %s: the number %s is beyond the range of a double (how most MCP servers parse JSON)", [ptr, num])

_number_cases := [
	{"args": {"n": 0}, "problems": set()},
	{"args": {"n": -0}, "problems": set()},
	{"args": {"n": 0.1}, "problems": set()},
	{"args": {"n": 12.34}, "problems": set()},
	{"args": {"n": 9007199254740992}, "problems": set()},
	{"args": {"n": -9007199254740992}, "problems": set()},
	{"args": {"n": 1e20}, "problems": set()},
	{"args": {"n": 100000000000000000000}, "problems": set()},
	{"args": {"n": 1e23}, "problems": set()},
	{"args": {"n": 1.5e300}, "problems": set()},
	{"args": {"n": 1.7976931348623157e308}, "problems": set()},
	{"args": {"n": 0.30000000000000004}, "problems": set()},
	{"args": {"n": 5e-324}, "problems": set()},
	{"args": {"n": 1e-7}, "problems": set()},
	{"args": {"n": 123456789012345}, "problems": set()},
	{"args": {"n": 1.0}, "problems": set()},
	{"args": {"n": 9007199254740993}, "problems": {_read_as("/n", "9007199254740993", "9.007199254740992e+15")}},
	{"args": {"n": -9007199254740993}, "problems": {_read_as("/n", "-9007199254740993", "-9.007199254740992e+15")}},
	{"args": {"n": 1.0000000000000001}, "problems": {_read_as("/n", "1.0000000000000001", "1")}},
	{"args": {"n": 12345678901234567890}, "problems": {_read_as("/n", "12345678901234567890", "1.2345678901234567e+19")}},
	{"args": {"n": 99999999999999991611392}, "problems": {_read_as("/n", "99999999999999991611392", "1e+23")}},
	{"args": {"n": 4.9e-324}, "problems": {_read_as("/n", "4.9e-324", "5e-324")}},
	{"args": {"n": 1e-400}, "problems": {_read_as("/n", "1e-400", "0")}},
	{"args": {"n": 1.7976931348623159e308}, "problems": {_beyond("/n", "1.7976931348623159e308")}},
	{"args": {"n": 1e400}, "problems": {_beyond("/n", "1e400")}},
	{"args": {"n": -1e400}, "problems": {_beyond("/n", "-1e400")}},
	# OPA calls two fractions of more than 15 digits equal when their doubles
	# are: the check compares exactly all the same
	{"args": {"n": 1.5000000000000000001e21}, "problems": {_read_as("/n", "1.5000000000000000001e21", "1.5e+21")}},
	{"args": {"n": 0.1000000000000000000001}, "problems": {_read_as("/n", "0.1000000000000000000001", "0.1")}},
	# paths are JSON Pointers; equal numbers are named wherever they are,
	# a number OPA calls equal to a bad one is not
	{
		"args": {"a/b": [1, {"c~d": 9007199254740993}], "e": 9007199254740993, "f": 0.1, "g": 0.1000000000000000000001},
		"problems": {
			_read_as("/a~1b/1/c~0d", "9007199254740993", "9.007199254740992e+15"),
			_read_as("/e", "9007199254740993", "9.007199254740992e+15"),
			_read_as("/g", "0.1000000000000000000001", "0.1"),
		},
	},
]

test_numbers_read_as_written if {
	every c in _number_cases {
		got := req.problems with input as object.union(_ok, {"args": c.args})
		print(c.args, got)
		got == c.problems
	}
}

# The shortcut: a number written in at most 15 characters of digits, a
# sign and a point is never a suspect, and is exact indeed.
test_short_numbers_are_exact if {
	every n in [0.1, 0.2, 0.3, 2.675, 1.1, 100.01, -0.000000000001, 999999999999999, -99999999999999, 0.0000000000001, 12345.678901234] {
		count(req._suspects) == 0 with input as object.union(_ok, {"args": {"n": n}})
		req._double_exact(n)
	}
}

# Number problems come with every other problem, and on the fast path.
test_numbers_with_other_problems if {
	bad := {"n": 9007199254740993}
	req.well_shaped with input as object.union(_ok, {"args": bad})
	count(req.problems) == 1 with input as object.union(_ok, {"args": bad})
	count(req.problems) == 2 with input as object.union(_ok, {"args": bad, "surface": 1})
}
