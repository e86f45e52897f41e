package mcpx.rules.s_4936f5f69da7abc0

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_4936f5f69da7abc0
	vs := _check(t.value, t.path)
}

_v1_string1(v) if not is_string(v)

_v1_string1(v) if {
	is_string(v)
	regex.match("^(refs/heads/)?(main|master)$", v)
}

_v1(v) if {
	_v1_string1(v)
}

_v0(v) if {
	is_string(v)
	not _v1(v)
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "string"}] if {
	not is_string(v)
}

default _s1_pattern1(_, _) := []

_s1_pattern1(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^(refs/heads/)?(main|master)$"}] if {
	is_string(v)
	not regex.match("^(refs/heads/)?(main|master)$", v)
}

_s1(v, p) := _s1_pattern1(v, p)

default _s0_not2(_, _) := []

_s0_not2(v, p) := [{"path": p, "value": v, "constraint": "not", "expected": {"pattern": "^(refs/heads/)?(main|master)$"}}] if {
	_v1(v)
}

_s0(v, p) := array.concat(_s0_type1(v, p), _s0_not2(v, p))

_check(v, p) := [] if {
	_v0(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]
