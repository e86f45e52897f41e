# A hand-written stand-in for the generated package of the schema
# {"properties": {"path": {"type": "string", "pattern": "^/workspace/"}}}.
package mcpx.rules.test_workspace

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.test_workspace
	vs := _check(t.value, t.path)
}

_check(v, prefix) := [{
	"path": concat("", [prefix, "/path"]),
	"value": v.path,
	"constraint": "pattern",
	"expected": "^/workspace/",
}] if {
	is_string(v.path)
	not regex.match(`^/workspace/`, v.path)
}

_check(v, _) := [] if {
	is_string(v.path)
	regex.match(`^/workspace/`, v.path)
}

_check(v, _) := [] if not is_string(v.path)
