# A hand-written stand-in for the generated package of {"const": false}.
package mcpx.rules.test_const_false

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.test_const_false
	vs := _check(t.value, t.path)
}

_check(v, prefix) := [{"path": prefix, "value": v, "constraint": "const", "expected": false}] if v != false

_check(false, _) := []
