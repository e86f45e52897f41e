package mcpx.rules.s_3cf97861e5a5cfaf

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_3cf97861e5a5cfaf
	vs := _check(t.value, t.path)
}

_s2(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^(--force(-with-lease)?(=.*)?|-f)$"} | is_string(v); not regex.match("^(--force(-with-lease)?(=.*)?|-f)$", v)]

_s1(v, p) := [x | some vs in [x2, x3]; some x in vs] if {
	x2 := [{"path": p, "value": v, "constraint": "type", "expected": "string"} | not is_string(v)]
	x3 := [{"path": p, "value": v, "constraint": "not", "expected": {"pattern": "^(--force(-with-lease)?(=.*)?|-f)$"}} | _v2_string1(v)]
}

_s0(v, p) := [x | some vs in [x7, x8]; some x in vs] if {
	x7 := [{"path": p, "value": v, "constraint": "type", "expected": "array"} | not is_array(v)]
	x8 := [x6 | is_array(v); some x4, x5 in v; some x6 in _s1(x5, concat("/", [p, format_int(x4, 10)]))]
}

_check(v, p) := [] if {
	is_array(v)
	every x9 in v {
		is_string(x9)
		not _v2_string1(x9)
	}
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]

_v2_string1(v) if not is_string(v)

_v2_string1(v) if {
	is_string(v)
	regex.match("^(--force(-with-lease)?(=.*)?|-f)$", v)
}
