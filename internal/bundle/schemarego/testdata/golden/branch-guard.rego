package mcpx.rules.s_4936f5f69da7abc0

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_4936f5f69da7abc0
	vs := _check(t.value, t.path)
}

_v1_string1(v) if not is_string(v)

_v1_string1(v) if {
	is_string(v)
	x1 := v
	regex.match("^(refs/heads/)?(main|master)$", x1)
}

_v1(v) if {
	x2 := v
	_v1_string1(x2)
}

_v0(v) if {
	x3 := v
	is_string(x3)
	x4 := v
	not _v1(x4)
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "string"}] if {
	x5 := v
	not is_string(x5)
}

default _s1_pattern1(_, _) := []

_s1_pattern1(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^(refs/heads/)?(main|master)$"}] if {
	x6 := v
	is_string(x6)
	x7 := v
	not regex.match("^(refs/heads/)?(main|master)$", x7)
}

_s1(v, p) := _s1_pattern1(v, p)

default _s0_not2(_, _) := []

_s0_not2(v, p) := [{"path": p, "value": v, "constraint": "not", "expected": {"pattern": "^(refs/heads/)?(main|master)$"}}] if {
	x8 := v
	_v1(x8)
}

_s0(v, p) := array.concat(_s0_type1(v, p), _s0_not2(v, p))

_check(v, p) := [] if {
	_v0(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]
