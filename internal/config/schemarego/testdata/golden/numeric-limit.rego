package mcpx.rules.s_29d9861c5c9718f3

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_29d9861c5c9718f3
	vs := _check(t.value, t.path)
}

_s1(v, p) := [x | some vs in [x3, x4, x5]; some x in vs] if {
	x3 := [{"path": p, "value": v, "constraint": "type", "expected": "integer"} | not _is_int(v)]
	x4 := [{"path": p, "value": v, "constraint": "minimum", "expected": 1} | is_number(v); v < 1]
	x5 := [{"path": p, "value": v, "constraint": "maximum", "expected": 100} | is_number(v); v > 100]
}

_s0(v, p) := [x | some vs in [x8, x9, x10]; some x in vs] if {
	x8 := [{"path": p, "value": v, "constraint": "type", "expected": "object"} | not is_object(v)]
	x9 := [{"path": p, "value": v, "constraint": "required", "expected": ["limit"], "detail": concat("", ["missing property ", json.marshal(x2)])} | is_object(v); some x2 in ["limit"]; not _has(v, x2)]
	x10 := [x7 | is_object(v); x6 := v.limit; some x7 in _s1(x6, concat("", [p, "/limit"]))]
}

_check(v, p) := [] if {
	is_object(v)
	x11 := v.limit
	_is_int(x11)
	x11 >= 1
	x11 <= 100
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]

_dec(v) := [_unum(s), e] if {
	m := regex.find_all_string_submatch_n(`^-?([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$`, json.marshal(v), 1)[0]
	ds := concat("", [m[1], m[2]])
	tr := trim_right(ds, "0")
	s := trim_left(tr, "0")
	e := (_exp(m[3]) - count(m[2])) + (count(ds) - count(tr))
}

_unum(s) := 0 if s == ""

else := json.unmarshal(s)

_exp(x) := 0 - _unum(trim_left(x, "-0")) if startswith(x, "-")

else := _unum(trim_left(x, "+0"))

_is_int(v) if {
	is_number(v)
	regex.match(`^-?[0-9]+$`, json.marshal(v))
}

_is_int(v) if {
	is_number(v)
	[d, e] := _dec(v)
	_int_de(d, e)
}

_int_de(d, _) if d == 0

_int_de(_, e) if e >= 0

_has(o, k) if _ = o[k]
