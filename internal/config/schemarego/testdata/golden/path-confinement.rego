package mcpx.rules.s_7c1dc5657436ffd4

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_7c1dc5657436ffd4
	vs := _check(t.value, t.path)
}

_s1(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "(^|/)\\.\\.(/|$)"} | is_string(v); not regex.match("(^|/)\\.\\.(/|$)", v)]

_s0(v, p) := [x | some vs in [x1, x2, x3]; some x in vs] if {
	x1 := [{"path": p, "value": v, "constraint": "type", "expected": "string"} | not is_string(v)]
	x2 := [{"path": p, "value": v, "constraint": "pattern", "expected": "^/workspace/"} | is_string(v); not regex.match("^/workspace/", v)]
	x3 := [{"path": p, "value": v, "constraint": "not", "expected": {"pattern": "(^|/)\\.\\.(/|$)"}} | _v1_string1(v)]
}

_check(v, p) := [] if {
	is_string(v)
	regex.match("^/workspace/", v)
	not _v1_string1(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]

_v1_string1(v) if not is_string(v)

_v1_string1(v) if {
	is_string(v)
	regex.match("(^|/)\\.\\.(/|$)", v)
}
