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
	_is_int(v)
	v >= 1
	v <= 1000
}

_has(o, k) if _ = o[k]

_v0_prop1(v) if not _has(v, "count")

_v0_prop1(v) if {
	x1 := v.count
	_is_int(x1)
	x1 >= 1
	x1 <= 1000
}

_v2(v) if {
	v in ["read", "write", "append"]
}

_v3(v) if {
	is_string(v)
	count(v) <= 4096
	regex.match("^/workspace/", v)
}

_v5(v) if {
	is_string(v)
	regex.match("^[a-z][a-z0-9-]*$", v)
}

_v4(v) if {
	is_array(v)
	count(v) <= 30
	every x in v {
		is_string(x)
		regex.match("^[a-z][a-z0-9-]*$", x)
	}
}

_v0_prop2(v) if not _has(v, "tags")

_v0_prop2(v) if {
	_v4(v.tags)
}

_v0(v) if {
	is_object(v)
	_v0_prop1(v)
	x2 := v.mode
	x2 in ["read", "write", "append"]
	x3 := v.path
	is_string(x3)
	count(x3) <= 4096
	regex.match("^/workspace/", x3)
	_v0_prop2(v)
	every k, _ in v {
		k in {"count", "mode", "path", "tags"}
	}
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "object"}] if {
	not is_object(v)
}

default _s0_required2(_, _) := []

_s0_required2(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["path", "mode"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["path", "mode"]; not _has(v, k)] if {
	is_object(v)
}

default _s1_type1(_, _) := []

_s1_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "integer"}] if {
	not _is_int(v)
}

default _s1_minimum2(_, _) := []

_s1_minimum2(v, p) := [{"path": p, "value": v, "constraint": "minimum", "expected": 1}] if {
	is_number(v)
	v < 1
}

default _s1_maximum3(_, _) := []

_s1_maximum3(v, p) := [{"path": p, "value": v, "constraint": "maximum", "expected": 1000}] if {
	is_number(v)
	v > 1000
}

_s1(v, p) := array.concat(array.concat(_s1_type1(v, p), _s1_minimum2(v, p)), _s1_maximum3(v, p))

default _s0_properties3(_, _) := []

_s0_properties3(v, p) := _s1(x, concat("", [p, "/count"])) if {
	is_object(v)
	x := v.count
}

default _s2_enum1(_, _) := []

_s2_enum1(v, p) := [{"path": p, "value": v, "constraint": "enum", "expected": ["read", "write", "append"]}] if {
	not v in ["read", "write", "append"]
}

_s2(v, p) := _s2_enum1(v, p)

default _s0_properties4(_, _) := []

_s0_properties4(v, p) := _s2(x, concat("", [p, "/mode"])) if {
	is_object(v)
	x := v.mode
}

default _s3_type1(_, _) := []

_s3_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "string"}] if {
	not is_string(v)
}

default _s3_maxLength2(_, _) := []

_s3_maxLength2(v, p) := [{"path": p, "value": v, "constraint": "maxLength", "expected": 4096}] if {
	is_string(v)
	count(v) > 4096
}

default _s3_pattern3(_, _) := []

_s3_pattern3(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^/workspace/"}] if {
	is_string(v)
	not regex.match("^/workspace/", v)
}

_s3(v, p) := array.concat(array.concat(_s3_type1(v, p), _s3_maxLength2(v, p)), _s3_pattern3(v, p))

default _s0_properties5(_, _) := []

_s0_properties5(v, p) := _s3(x, concat("", [p, "/path"])) if {
	is_object(v)
	x := v.path
}

default _s4_type1(_, _) := []

_s4_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "array"}] if {
	not is_array(v)
}

default _s4_maxItems2(_, _) := []

_s4_maxItems2(v, p) := [{"path": p, "value": v, "constraint": "maxItems", "expected": 30}] if {
	is_array(v)
	count(v) > 30
}

default _s5_type1(_, _) := []

_s5_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "string"}] if {
	not is_string(v)
}

default _s5_pattern2(_, _) := []

_s5_pattern2(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^[a-z][a-z0-9-]*$"}] if {
	is_string(v)
	not regex.match("^[a-z][a-z0-9-]*$", v)
}

_s5(v, p) := array.concat(_s5_type1(v, p), _s5_pattern2(v, p))

default _s4_items3(_, _) := []

_s4_items3(v, p) := [x | some i, e in v; some x in _s5(e, concat("/", [p, format_int(i, 10)]))] if {
	is_array(v)
}

_s4(v, p) := array.concat(array.concat(_s4_type1(v, p), _s4_maxItems2(v, p)), _s4_items3(v, p))

default _s0_properties6(_, _) := []

_s0_properties6(v, p) := _s4(x, concat("", [p, "/tags"])) if {
	is_object(v)
	x := v.tags
}

_esc(k) := replace(replace(k, "~", "~0"), "/", "~1")

_s0_additionalProperties7_known(k) if k in {"count", "mode", "path", "tags"}

default _s0_additionalProperties7(_, _) := []

_s0_additionalProperties7(v, p) := [{"path": concat("/", [p, _esc(k)]), "value": e, "constraint": "additionalProperties", "expected": false} | some k, e in v; not _s0_additionalProperties7_known(k)] if {
	is_object(v)
}

_s0(v, p) := array.concat(array.concat(array.concat(array.concat(array.concat(array.concat(_s0_type1(v, p), _s0_required2(v, p)), _s0_properties3(v, p)), _s0_properties4(v, p)), _s0_properties5(v, p)), _s0_properties6(v, p)), _s0_additionalProperties7(v, p))

_check(v, p) := [] if {
	_v0(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]
