package mcpx.rules.s_7c1dc5657436ffd4

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_7c1dc5657436ffd4
	vs := _check(t.value, t.path)
}

_v1_string1(v) if not is_string(v)

_v1_string1(v) if {
	is_string(v)
	x1 := v
	regex.match("(^|/)\\.\\.(/|$)", x1)
}

_v1(v) if {
	x2 := v
	_v1_string1(x2)
}

_v0(v) if {
	x3 := v
	is_string(x3)
	x4 := v
	regex.match("^/workspace/", x4)
	x5 := v
	not _v1(x5)
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "string"}] if {
	x6 := v
	not is_string(x6)
}

default _s0_pattern2(_, _) := []

_s0_pattern2(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^/workspace/"}] if {
	x7 := v
	is_string(x7)
	x8 := v
	not regex.match("^/workspace/", x8)
}

default _s1_pattern1(_, _) := []

_s1_pattern1(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "(^|/)\\.\\.(/|$)"}] if {
	x9 := v
	is_string(x9)
	x10 := v
	not regex.match("(^|/)\\.\\.(/|$)", x10)
}

_s1(v, p) := _s1_pattern1(v, p)

default _s0_not3(_, _) := []

_s0_not3(v, p) := [{"path": p, "value": v, "constraint": "not", "expected": {"pattern": "(^|/)\\.\\.(/|$)"}}] if {
	x11 := v
	_v1(x11)
}

_s0(v, p) := array.concat(array.concat(_s0_type1(v, p), _s0_pattern2(v, p)), _s0_not3(v, p))

_check(v, p) := [] if {
	_v0(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]
