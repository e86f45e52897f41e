package mcpx.rules.s_29d9861c5c9718f3

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_29d9861c5c9718f3
	vs := _check(t.value, t.path)
}

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
	t := json.marshal(v)
	not contains(t, ".")
	not contains(t, "e")
	not contains(t, "E")
}

_is_int(v) if {
	is_number(v)
	[d, e] := _dec(v)
	_int_de(d, e)
}

_int_de(d, _) if d == 0

_int_de(_, e) if e >= 0

_v1(v) if {
	x1 := v
	_is_int(x1)
	x2 := v
	x2 >= 1
	x3 := v
	x3 <= 100
}

_v0(v) if {
	x7 := v
	is_object(x7)
	x4 := v.limit
	_is_int(x4)
	x5 := v.limit
	x5 >= 1
	x6 := v.limit
	x6 <= 100
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "object"}] if {
	x8 := v
	not is_object(x8)
}

_has(o, k) if _ = o[k]

default _s0_required2(_, _) := []

_s0_required2(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["limit"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["limit"]; not _has(v, k)] if {
	x9 := v
	is_object(x9)
}

default _s1_type1(_, _) := []

_s1_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "integer"}] if {
	x10 := v
	not _is_int(x10)
}

default _s1_minimum2(_, _) := []

_s1_minimum2(v, p) := [{"path": p, "value": v, "constraint": "minimum", "expected": 1}] if {
	x11 := v
	is_number(x11)
	x12 := v
	x12 < 1
}

default _s1_maximum3(_, _) := []

_s1_maximum3(v, p) := [{"path": p, "value": v, "constraint": "maximum", "expected": 100}] if {
	x13 := v
	is_number(x13)
	x14 := v
	x14 > 100
}

_s1(v, p) := array.concat(array.concat(_s1_type1(v, p), _s1_minimum2(v, p)), _s1_maximum3(v, p))

default _s0_properties3(_, _) := []

_s0_properties3(v, p) := _s1(x, concat("", [p, "/limit"])) if {
	x15 := v
	is_object(x15)
	x16 := v
	x := x16.limit
}

_s0(v, p) := array.concat(array.concat(_s0_type1(v, p), _s0_required2(v, p)), _s0_properties3(v, p))

_check(v, p) := [] if {
	_v0(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]
