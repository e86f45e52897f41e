package mcpx.rules.s_3cf97861e5a5cfaf

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_3cf97861e5a5cfaf
	vs := _check(t.value, t.path)
}

_v2_string1(v) if not is_string(v)

_v2_string1(v) if {
	is_string(v)
	x1 := v
	regex.match("^(--force(-with-lease)?(=.*)?|-f)$", x1)
}

_v2(v) if {
	x2 := v
	_v2_string1(x2)
}

_v1(v) if {
	x3 := v
	is_string(x3)
	x4 := v
	not _v2(x4)
}

_v0(v) if {
	x7 := v
	is_array(x7)
	x8 := v
	every x in x8 {
		x5 := x
		is_string(x5)
		x6 := x
		not _v2(x6)
	}
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "array"}] if {
	x9 := v
	not is_array(x9)
}

default _s1_type1(_, _) := []

_s1_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "string"}] if {
	x10 := v
	not is_string(x10)
}

default _s2_pattern1(_, _) := []

_s2_pattern1(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^(--force(-with-lease)?(=.*)?|-f)$"}] if {
	x11 := v
	is_string(x11)
	x12 := v
	not regex.match("^(--force(-with-lease)?(=.*)?|-f)$", x12)
}

_s2(v, p) := _s2_pattern1(v, p)

default _s1_not2(_, _) := []

_s1_not2(v, p) := [{"path": p, "value": v, "constraint": "not", "expected": {"pattern": "^(--force(-with-lease)?(=.*)?|-f)$"}}] if {
	x13 := v
	_v2(x13)
}

_s1(v, p) := array.concat(_s1_type1(v, p), _s1_not2(v, p))

default _s0_items2(_, _) := []

_s0_items2(v, p) := [x | some i, e in v; some x in _s1(e, concat("/", [p, format_int(i, 10)]))] if {
	x14 := v
	is_array(x14)
}

_s0(v, p) := array.concat(_s0_type1(v, p), _s0_items2(v, p))

_check(v, p) := [] if {
	_v0(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]
