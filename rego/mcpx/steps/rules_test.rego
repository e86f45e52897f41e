package mcpx.steps.rules_test

import data.mcpx.steps.rules
import data.mcpx.testdata

_deny(server, tool, args) := d if {
	d := rules.deny with input as testdata.call(server, tool, args) with data.mcpx.config as testdata.config
}

test_matching_is_by_exact_name_and_regex if {
	m1 := rules.matched with input as testdata.call("fs", {"name": "write_file"}, {}) with data.mcpx.config as testdata.config
	m1 == {"fs-writes-in-workspace"}
	m2 := rules.matched with input as testdata.call("fs", {"name": "move_file"}, {}) with data.mcpx.config as testdata.config
	m2 == {"fs-writes-in-workspace"}
	m3 := rules.matched with input as testdata.call("fs", {"name": "read_file"}, {}) with data.mcpx.config as testdata.config
	m3 == set()
	m4 := rules.matched with input as testdata.call("git", {"name": "write_file"}, {}) with data.mcpx.config as testdata.config
	m4 == set()
}

test_violation_document if {
	_deny("fs", testdata.write_file, {"path": "/etc/passwd", "content": "x"}) == {{
		"code": "ArgumentRuleViolation",
		"step": "argument_rules",
		"message": `fs.write_file: /path "/etc/passwd" does not match ^/workspace/ (rule fs-writes-in-workspace, mcpx-policy.yaml:14)`,
		"violations": [{
			"path": "/path", "value": "/etc/passwd", "constraint": "pattern", "expected": "^/workspace/",
			"rule": {"id": "fs-writes-in-workspace", "origin": "mcpx-policy.yaml:14", "description": "writes stay in the workspace"},
		}],
	}}
}

test_accepted_arguments_pass if {
	count(_deny("fs", testdata.write_file, {"path": "/workspace/a"})) == 0
}

test_per_argument_rule_targets_the_argument if {
	t := rules.targets with input as testdata.call("git", testdata.git_push, {"force": true, "branch": "x"})
		with data.mcpx.config as testdata.config
	t == {"test_const_false": {"no-force-push": {"value": true, "path": "/force"}}}
	[v.path | some r in _deny("git", testdata.git_push, {"force": true}); some v in r.violations] == ["/force"]
}

test_absent_argument_passes_unless_required if {
	count(_deny("git", testdata.git_push, {})) == 0
	cfg := json.patch(testdata.config, [{"op": "replace", "path": "/rules/no-force-push/required", "value": true}])
	d := rules.deny with input as testdata.call("git", testdata.git_push, {}) with data.mcpx.config as cfg
	[r.message | some r in d] == ["git.git_push: /force is missing (rule no-force-push, mcpx-policy.yaml:22)"]
}

test_false_and_null_arguments_are_present if {
	count(_deny("git", testdata.git_push, {"force": false})) == 0
	count(_deny("git", testdata.git_push, {"force": null})) == 1
}

test_secret_values_are_redacted_in_violations_and_messages if {
	d := _deny("git", testdata.git_push, {"force": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"})
	some r in d
	not contains(r.message, "ghp_")
	r.violations[0].value == "[REDACTED github-token, 40 chars]"
}

_ref := {"id": "r", "origin": "f.yaml:1", "description": ""}

test_secret_shaped_keys_are_redacted_in_paths if {
	v := rules._violation({"path": "/headers/ghp_abcdefghijklmnopqrstuvwxyz0123456789", "value": "x", "constraint": "false", "expected": false}, _ref)
	v.path == "/headers/[REDACTED github-token, 40 chars]"
	v.value == "x"
	plain := rules._violation({"path": "/a~1b/0", "value": 1, "constraint": "maximum", "expected": 0}, _ref)
	plain.path == "/a~1b/0"
}

test_values_are_redacted_before_they_are_cut if {
	long := concat(" ", [concat("", ["x" | some _ in numbers.range(1, 109)]), "AKIAIOSFODNN7EXAMPLE", concat("", ["y" | some _ in numbers.range(1, 99)])])
	v := rules._violation({"path": "/content", "value": long, "constraint": "maxLength", "expected": 10}, _ref)
	not contains(v.value, "AKIA")
	contains(v.value, " [REDACTED")
	endswith(v.value, "(230 characters)")
}

test_details_and_expected_are_redacted if {
	v := rules._violation(
		{
			"path": "/cmd", "value": "x", "constraint": "anyOf",
			"expected": {"const": "mysql -u root -pHunter2pass"},
			"detail": `branch 0: const at ["cmd","ghp_abcdefghijklmnopqrstuvwxyz0123456789"]`,
		},
		_ref,
	)
	v.expected == {"const": "mysql -u root -p[REDACTED password-flag, 11 chars]"}
	not contains(v.detail, "ghp_")
}

_phrase_cases := [
	{"v": {"path": "/n", "value": 5, "constraint": "maximum", "expected": 3}, "want": "/n 5 is greater than 3"},
	{"v": {"path": "", "value": {}, "constraint": "required", "expected": ["a"]}, "want": `arguments lacks required properties ["a"]`},
	{"v": {"path": "/x", "value": 1, "constraint": "additionalProperties", "expected": false}, "want": "/x is not allowed"},
	{"v": {"path": "/t", "value": [1, 1], "constraint": "uniqueItems", "expected": true}, "want": "/t [1,1] has duplicate items"},
	{"v": {"path": "/m", "value": "x", "constraint": "anyOf", "expected": 2, "detail": "branch 0: type; branch 1: enum"}, "want": `/m "x" matches none of the anyOf schemas (branch 0: type; branch 1: enum)`},
	{"v": {"path": "/m", "value": "x", "constraint": "frobnicate", "expected": 2}, "want": `/m "x" fails frobnicate 2`},
	{"v": {"path": "/m", "value": "x", "constraint": "enum", "expected": ["a", "b"]}, "want": `/m "x" is not one of ["a","b"]`},
]

test_phrases if {
	every c in _phrase_cases {
		got := rules._phrase(c.v)
		print(got)
		got == c.want
	}
}

test_malformed_generated_violation_still_denies if {
	d := data.mcpx.decision with input as testdata.call("git", testdata.git_push, {"force": true})
		with data.mcpx.config as testdata.config with data.mcpx.overrides.deny as set() with data.mcpx.overrides.ask as set()
		with data.mcpx.rules.test_const_false.violations as {"no-force-push": ["not an object"]}
	d.outcome == "deny"
	d.step == "argument_rules"
}

# A per-argument rule on /items/0/force: the loader compiles both readings
# of the digit token (an array index and an object key).
_indexed_config(required) := json.patch(testdata.config, [{"op": "replace", "path": "/rules/no-force-push", "value": object.union(
	testdata.config.rules["no-force-push"],
	{
		"argument": ["items", "0", "force"],
		"paths": [["items", "0", "force"], ["items", 0, "force"]],
		"pointer": "/items/0/force",
		"required": required,
	},
)}])

_indexed_cases := [
	# args, required → violation paths
	{"args": {"items": [{"force": true}]}, "required": false, "paths": ["/items/0/force"]},
	{"args": {"items": [{"force": false}]}, "required": false, "paths": []},
	{"args": {"items": [{"force": false}, {"force": true}]}, "required": false, "paths": []},
	{"args": {"items": {"0": {"force": true}}}, "required": false, "paths": ["/items/0/force"]},
	{"args": {"items": {"0": {"force": false}}}, "required": false, "paths": []},
	{"args": {"items": []}, "required": false, "paths": []},
	{"args": {"items": [{}]}, "required": false, "paths": []},
	{"args": {"items": {"00": {"force": true}}}, "required": false, "paths": []},
	{"args": {}, "required": false, "paths": []},
	{"args": {"items": []}, "required": true, "paths": ["/items/0/force"]},
	{"args": {"items": [{"force": false}]}, "required": true, "paths": []},
	{"args": {"items": {"0": {"force": false}}}, "required": true, "paths": []},
]

test_array_index_pointers if {
	every c in _indexed_cases {
		d := rules.deny with input as testdata.call("git", testdata.git_push, c.args) with data.mcpx.config as _indexed_config(c.required)
		print(c, d)
		[v.path | some r in d; some v in r.violations] == c.paths
	}
}

test_array_index_pointer_targets_the_element if {
	t := rules.targets with input as testdata.call("git", testdata.git_push, {"items": [{"force": true}, {"force": false}]})
		with data.mcpx.config as _indexed_config(false)
	t == {"test_const_false": {"no-force-push": {"value": true, "path": "/items/0/force"}}}
}

test_absent_element_message if {
	d := rules.deny with input as testdata.call("git", testdata.git_push, {"items": []}) with data.mcpx.config as _indexed_config(true)
	[r.message | some r in d] == ["git.git_push: /items/0/force is missing (rule no-force-push, mcpx-policy.yaml:22)"]
}

# A matched rule without its compiled readings is a problem (a PolicyError),
# never a rule that is skipped.
test_rule_without_paths_is_a_problem if {
	cfg := json.patch(testdata.config, [{"op": "remove", "path": "/rules/no-force-push/paths"}])
	p := rules.problems with input as testdata.call("git", testdata.git_push, {"force": true}) with data.mcpx.config as cfg
	p == {"argument rule no-force-push is not in data.mcpx.config.rules with its compiled package, pointer and paths"}
}

# Every violation the step renders from its template is what _violation and
# _phrase make of it: the phrase cases, the redaction cases above (secret
# values, keys, details and expected values, long values, escaped paths),
# malformed violations, for two rules.
_render_cases := array.concat([c.v | some c in _phrase_cases], [
	{"path": "/headers/ghp_abcdefghijklmnopqrstuvwxyz0123456789", "value": "x", "constraint": "false", "expected": false},
	{"path": "/a~1b/0", "value": 1, "constraint": "maximum", "expected": 0},
	{"path": "/content", "value": concat(" ", [concat("", ["x" | some _ in numbers.range(1, 109)]), "AKIAIOSFODNN7EXAMPLE"]), "constraint": "maxLength", "expected": 10},
	{"path": "/token", "value": "plain", "constraint": "pattern", "expected": "^x$"},
	{"path": "/cmd", "value": "x", "constraint": "anyOf", "expected": {"const": "mysql -u root -pHunter2pass"}, "detail": `branch 0: const at ["cmd","ghp_abcdefghijklmnopqrstuvwxyz0123456789"]`},
	{"path": "/d", "value": {"password": "p", "n": [1, 2]}, "constraint": "maxProperties", "expected": 1, "detail": 7},
	{"path": "", "value": null, "constraint": "required", "expected": true},
	{"path": "/p", "value": [{"k": "v"}], "constraint": "contains", "expected": null},
	"not an object",
	{"path": "/only"},
])

test_rendered_violations_equal_the_steps if {
	every id in ["fs-writes-in-workspace", "no-force-push"] {
		every raw in _render_cases {
			_renders_as_the_steps(raw, id) with data.mcpx.config as testdata.config
		}
	}
}

_renders_as_the_steps(raw, id) if {
	v := rules._normal(raw)
	want := rules._violation(v, rules._rule_ref(id))
	rules._render(v, id) == {"violation": want, "phrase": rules._phrase(want)}
}

test_path_and_url_violations_name_what_is_allowed_and_why if {
	p := {
		"path": "/path", "value": "/workspace/../etc/passwd", "constraint": "pathWithin", "expected": ["/workspace"],
		"detail": `has a ".." segment, which is refused; it resolves to /etc/passwd`,
	}
	rules._phrase(p) == `/path "/workspace/../etc/passwd" is not a path inside ["/workspace"] (has a ".." segment, which is refused; it resolves to /etc/passwd)`
	u := {
		"path": "/url", "value": "https://good.com@evil.com", "constraint": "urlWithin", "expected": {"hosts": ["good.com"]},
		"detail": "has userinfo (user@host), which is refused: https://good.com@evil.com goes to evil.com",
	}
	rules._phrase(u) == `/url "https://good.com@evil.com" is not a URL allowed by {"hosts":["good.com"]} (has userinfo (user@host), which is refused: https://good.com@evil.com goes to evil.com)`
}
