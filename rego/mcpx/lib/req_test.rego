package mcpx.lib.req_test

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

# _fast may only take a call the full checks accept, and then every value
# it hands the steps must equal the full path's.
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
	}
	taken := [1 | some c in _fast_cases; req._fast with input as c]
	count(taken) == 7
}

_agrees(c) if not req._fast with input as c

_agrees(c) if {
	req._fast with input as c
	count(req._problems) == 0 with input as c
	fast := req.doc with input as c
	full := req.doc with input as c with req._fast as false
	fast == full
}
