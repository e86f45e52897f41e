package mcpx.rules.s_f61d5c791b06ac46

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_f61d5c791b06ac46
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
	x3 <= 1000
}

_has(o, k) if _ = o[k]

_v0_prop1(v) if not _has(v, "count")

_v0_prop1(v) if {
	x4 := v.count
	_is_int(x4)
	x5 := v.count
	x5 >= 1
	x6 := v.count
	x6 <= 1000
}

_v2(v) if {
	x7 := v
	x7 in ["read", "write", "append"]
}

_v3(v) if {
	x9 := v
	is_string(x9)
	x10 := v
	count(x10) <= 4096
	x11 := v
	regex.match("^/workspace/", x11)
}

_v5(v) if {
	x15 := v
	is_string(x15)
	x16 := v
	regex.match("^[a-z][a-z0-9-]*$", x16)
}

_v4(v) if {
	x19 := v
	is_array(x19)
	x20 := v
	count(x20) <= 30
	x21 := v
	every x in x21 {
		x17 := x
		is_string(x17)
		x18 := x
		regex.match("^[a-z][a-z0-9-]*$", x18)
	}
}

_v0_prop2(v) if not _has(v, "tags")

_v0_prop2(v) if {
	x22 := v.tags
	_v4(x22)
}

_v0(v) if {
	x23 := v
	is_object(x23)
	x24 := v
	_v0_prop1(x24)
	x8 := v.mode
	x8 in ["read", "write", "append"]
	x12 := v.path
	is_string(x12)
	x13 := v.path
	count(x13) <= 4096
	x14 := v.path
	regex.match("^/workspace/", x14)
	x25 := v
	_v0_prop2(x25)
	x26 := v
	count(object.remove(x26, {"count", "mode", "path", "tags"})) == 0
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "object"}] if {
	x27 := v
	not is_object(x27)
}

default _s0_required2(_, _) := []

_s0_required2(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["path", "mode"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["path", "mode"]; not _has(v, k)] if {
	x28 := v
	is_object(x28)
}

default _s1_type1(_, _) := []

_s1_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "integer"}] if {
	x29 := v
	not _is_int(x29)
}

default _s1_minimum2(_, _) := []

_s1_minimum2(v, p) := [{"path": p, "value": v, "constraint": "minimum", "expected": 1}] if {
	x30 := v
	is_number(x30)
	x31 := v
	x31 < 1
}

default _s1_maximum3(_, _) := []

_s1_maximum3(v, p) := [{"path": p, "value": v, "constraint": "maximum", "expected": 1000}] if {
	x32 := v
	is_number(x32)
	x33 := v
	x33 > 1000
}

_s1(v, p) := array.concat(array.concat(_s1_type1(v, p), _s1_minimum2(v, p)), _s1_maximum3(v, p))

default _s0_properties3(_, _) := []

_s0_properties3(v, p) := _s1(x, concat("", [p, "/count"])) if {
	x34 := v
	is_object(x34)
	x35 := v
	x := x35.count
}

default _s2_enum1(_, _) := []

_s2_enum1(v, p) := [{"path": p, "value": v, "constraint": "enum", "expected": ["read", "write", "append"]}] if {
	x36 := v
	not x36 in ["read", "write", "append"]
}

_s2(v, p) := _s2_enum1(v, p)

default _s0_properties4(_, _) := []

_s0_properties4(v, p) := _s2(x, concat("", [p, "/mode"])) if {
	x37 := v
	is_object(x37)
	x38 := v
	x := x38.mode
}

default _s3_type1(_, _) := []

_s3_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "string"}] if {
	x39 := v
	not is_string(x39)
}

default _s3_maxLength2(_, _) := []

_s3_maxLength2(v, p) := [{"path": p, "value": v, "constraint": "maxLength", "expected": 4096}] if {
	x40 := v
	is_string(x40)
	x41 := v
	count(x41) > 4096
}

default _s3_pattern3(_, _) := []

_s3_pattern3(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^/workspace/"}] if {
	x42 := v
	is_string(x42)
	x43 := v
	not regex.match("^/workspace/", x43)
}

_s3(v, p) := array.concat(array.concat(_s3_type1(v, p), _s3_maxLength2(v, p)), _s3_pattern3(v, p))

default _s0_properties5(_, _) := []

_s0_properties5(v, p) := _s3(x, concat("", [p, "/path"])) if {
	x44 := v
	is_object(x44)
	x45 := v
	x := x45.path
}

default _s4_type1(_, _) := []

_s4_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "array"}] if {
	x46 := v
	not is_array(x46)
}

default _s4_maxItems2(_, _) := []

_s4_maxItems2(v, p) := [{"path": p, "value": v, "constraint": "maxItems", "expected": 30}] if {
	x47 := v
	is_array(x47)
	x48 := v
	count(x48) > 30
}

default _s5_type1(_, _) := []

_s5_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "string"}] if {
	x49 := v
	not is_string(x49)
}

default _s5_pattern2(_, _) := []

_s5_pattern2(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^[a-z][a-z0-9-]*$"}] if {
	x50 := v
	is_string(x50)
	x51 := v
	not regex.match("^[a-z][a-z0-9-]*$", x51)
}

_s5(v, p) := array.concat(_s5_type1(v, p), _s5_pattern2(v, p))

default _s4_items3(_, _) := []

_s4_items3(v, p) := [x | some i, e in v; some x in _s5(e, concat("/", [p, format_int(i, 10)]))] if {
	x52 := v
	is_array(x52)
}

_s4(v, p) := array.concat(array.concat(_s4_type1(v, p), _s4_maxItems2(v, p)), _s4_items3(v, p))

default _s0_properties6(_, _) := []

_s0_properties6(v, p) := _s4(x, concat("", [p, "/tags"])) if {
	x53 := v
	is_object(x53)
	x54 := v
	x := x54.tags
}

_esc(k) := replace(replace(k, "~", "~0"), "/", "~1")

_s0_additionalProperties7_known(k) if k in {"count", "mode", "path", "tags"}

default _s0_additionalProperties7(_, _) := []

_s0_additionalProperties7(v, p) := [{"path": concat("/", [p, _esc(k)]), "value": e, "constraint": "additionalProperties", "expected": false} | some k, e in v; not _s0_additionalProperties7_known(k)] if {
	x55 := v
	is_object(x55)
}

_s0(v, p) := array.concat(array.concat(array.concat(array.concat(array.concat(array.concat(_s0_type1(v, p), _s0_required2(v, p)), _s0_properties3(v, p)), _s0_properties4(v, p)), _s0_properties5(v, p)), _s0_properties6(v, p)), _s0_additionalProperties7(v, p))

_check(v, p) := [] if {
	_v0(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]
