package mcpx.lib.patterns_test

import data.mcpx.lib.patterns

_ps := {
	"exact": {"write_file": ["r1"], "edit_file": ["r1", "r2"]},
	"regex": [
		{"source": "move_*", "re": "^move_.*$", "values": ["r3"]},
		{"source": "/file/", "re": "file", "values": ["r4"]},
	],
}

_cases := [
	{"name": "write_file", "want": {"r1", "r4"}},
	{"name": "edit_file", "want": {"r1", "r2", "r4"}},
	{"name": "move_x", "want": {"r3"}},
	{"name": "nothing", "want": set()},
]

test_values if {
	every c in _cases {
		patterns.values(_ps, c.name) == c.want
	}
}

test_empty_set_matches_nothing if {
	not patterns.matches({}, "x")
	patterns.matches(_ps, "move_x")
}

test_matches_needs_values if {
	not patterns.matches({"exact": {"x": []}, "regex": [{"source": "*", "re": "^.*$", "values": []}]}, "x")
	patterns.matches({"exact": {}, "regex": [{"source": "*", "re": "^.*$", "values": ["v"]}]}, "x")
	patterns.matches({"exact": {"x": ["v"]}}, "x")
}
