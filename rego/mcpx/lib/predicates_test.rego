package mcpx.lib.predicates_test

import data.mcpx.lib.predicates
import data.mcpx.testdata

_holds(rule, x) if {
	rule == "well_formed"
	predicates.well_formed with input as x with data.mcpx.config as testdata.config
}

_holds(rule, x) if {
	rule == "no_unknown_args"
	predicates.no_unknown_args with input as x with data.mcpx.config as testdata.config
}

_holds(rule, x) if {
	rule == "rules_accept"
	predicates.rules_accept with input as x with data.mcpx.config as testdata.config
}

# predicate, input → whether it holds
_cases := [
	{"rule": "well_formed", "input": testdata.call("fs", testdata.read_file, {"path": "/a"}), "holds": true},
	{"rule": "well_formed", "input": testdata.call("fs", testdata.read_file, ["x"]), "holds": false},
	{"rule": "well_formed", "input": testdata.call("fs", testdata.read_file, {"n": 9007199254740993}), "holds": false},
	{"rule": "no_unknown_args", "input": testdata.call("fs", testdata.read_file, {"path": "/a", "max_bytes": 1}), "holds": true},
	{"rule": "no_unknown_args", "input": testdata.call("fs", testdata.read_file, {"path": "/a", "lnes": 1}), "holds": false},
	{"rule": "no_unknown_args", "input": testdata.call("git", testdata.git_push, {"forse": true}), "holds": false},
	# unknownArgs off for search_* (pool): nothing to report
	{"rule": "no_unknown_args", "input": testdata.call("git", {"name": "search_code", "inputSchema": {"type": "object", "properties": {}}}, {"q": 1}), "holds": true},
	{"rule": "rules_accept", "input": testdata.call("fs", testdata.write_file, {"path": "/workspace/a"}), "holds": true},
	{"rule": "rules_accept", "input": testdata.call("fs", testdata.write_file, {"path": "/etc/a"}), "holds": false},
	{"rule": "rules_accept", "input": testdata.call("git", testdata.git_push, {"force": true}), "holds": false},
	{"rule": "rules_accept", "input": testdata.call("git", testdata.git_push, {}), "holds": true},
]

test_predicates if {
	every c in _cases {
		print(c.rule, c.input.args)
		_value(c.rule, c.input) == c.holds
	}
}

_value(rule, x) if _holds(rule, x)

else := false

# accepting_packages holds the matched packages that accept their targets:
# the one a denied path breaks is left out, one with no target is in.
test_accepting_packages if {
	ok := predicates.accepting_packages with input as testdata.call("git", testdata.git_push, {"force": false})
		with data.mcpx.config as testdata.config
	ok == {"test_const_false"}
	bad := predicates.accepting_packages with input as testdata.call("git", testdata.git_push, {"force": true})
		with data.mcpx.config as testdata.config
	bad == set()
	none := predicates.accepting_packages with input as testdata.call("git", testdata.git_push, {})
		with data.mcpx.config as testdata.config
	none == {"test_const_false"}
}
