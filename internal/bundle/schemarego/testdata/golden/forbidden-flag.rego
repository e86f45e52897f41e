package mcpx.rules.s_3cf97861e5a5cfaf

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_3cf97861e5a5cfaf
	vs := _check(t.value, t.path)
}

_v2_string1(v) if not is_string(v)

_v2_string1(v) if {
	is_string(v)
	regex.match("^(--force(-with-lease)?(=.*)?|-f)$", v)
}

_v2(v) if {
	_v2_string1(v)
}

_v1(v) if {
	is_string(v)
	not _v2(v)
}

_v0(v) if {
	is_array(v)
	every x in v {
		is_string(x)
		not _v2(x)
	}
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "array"}] if {
	not is_array(v)
}

default _s1_type1(_, _) := []

_s1_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "string"}] if {
	not is_string(v)
}

default _s2_pattern1(_, _) := []

_s2_pattern1(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^(--force(-with-lease)?(=.*)?|-f)$"}] if {
	is_string(v)
	not regex.match("^(--force(-with-lease)?(=.*)?|-f)$", v)
}

_s2(v, p) := _s2_pattern1(v, p)

default _s1_not2(_, _) := []

_s1_not2(v, p) := [{"path": p, "value": v, "constraint": "not", "expected": {"pattern": "^(--force(-with-lease)?(=.*)?|-f)$"}}] if {
	_v2(v)
}

_s1(v, p) := array.concat(_s1_type1(v, p), _s1_not2(v, p))

default _s0_items2(_, _) := []

_s0_items2(v, p) := [x | some i, e in v; some x in _s1(e, concat("/", [p, format_int(i, 10)]))] if {
	is_array(v)
}

_s0(v, p) := array.concat(_s0_type1(v, p), _s0_items2(v, p))

_check(v, p) := [] if {
	_v0(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]
