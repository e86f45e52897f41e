package mcpx.rules.s_f61d5c791b06ac46

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_f61d5c791b06ac46
	vs := _check(t.value, t.path)
}

_s1(v, p) := [x | some vs in [x8, x9, x10]; some x in vs] if {
	x8 := [{"path": p, "value": v, "constraint": "type", "expected": "integer"} | not _is_int(v)]
	x9 := [{"path": p, "value": v, "constraint": "minimum", "expected": 1} | is_number(v); v < 1]
	x10 := [{"path": p, "value": v, "constraint": "maximum", "expected": 1000} | is_number(v); v > 1000]
}

_s2(v, p) := [{"path": p, "value": v, "constraint": "enum", "expected": ["read", "write", "append"]} | not v in ["read", "write", "append"]]

_s3(v, p) := [x | some vs in [x15, x16, x17]; some x in vs] if {
	x15 := [{"path": p, "value": v, "constraint": "type", "expected": "string"} | not is_string(v)]
	x16 := [{"path": p, "value": v, "constraint": "maxLength", "expected": 4096} | is_string(v); count(v) > 4096]
	x17 := [{"path": p, "value": v, "constraint": "pattern", "expected": "^/workspace/"} | is_string(v); not regex.match("^/workspace/", v)]
}

_s5(v, p) := [x | some vs in [x20, x21]; some x in vs] if {
	x20 := [{"path": p, "value": v, "constraint": "type", "expected": "string"} | not is_string(v)]
	x21 := [{"path": p, "value": v, "constraint": "pattern", "expected": "^[a-z][a-z0-9-]*$"} | is_string(v); not regex.match("^[a-z][a-z0-9-]*$", v)]
}

_s4(v, p) := [x | some vs in [x25, x26, x27]; some x in vs] if {
	x25 := [{"path": p, "value": v, "constraint": "type", "expected": "array"} | not is_array(v)]
	x26 := [{"path": p, "value": v, "constraint": "maxItems", "expected": 30} | is_array(v); count(v) > 30]
	x27 := [x24 | is_array(v); some x22, x23 in v; some x24 in _s5(x23, concat("/", [p, format_int(x22, 10)]))]
}

_s0_additionalProperties1_known(k) if k in {"count", "mode", "path", "tags"}

_s0(v, p) := [x | some vs in [x32, x33, x34, x35, x36, x37, x38]; some x in vs] if {
	x32 := [{"path": p, "value": v, "constraint": "type", "expected": "object"} | not is_object(v)]
	x33 := [{"path": p, "value": v, "constraint": "required", "expected": ["path", "mode"], "detail": concat("", ["missing property ", json.marshal(x7)])} | is_object(v); some x7 in ["path", "mode"]; not _has(v, x7)]
	x34 := [x12 | is_object(v); x11 := v.count; some x12 in _s1(x11, concat("", [p, "/count"]))]
	x35 := [x14 | is_object(v); x13 := v.mode; some x14 in _s2(x13, concat("", [p, "/mode"]))]
	x36 := [x19 | is_object(v); x18 := v.path; some x19 in _s3(x18, concat("", [p, "/path"]))]
	x37 := [x29 | is_object(v); x28 := v.tags; some x29 in _s4(x28, concat("", [p, "/tags"]))]
	x38 := [{"path": concat("/", [p, _esc(x30)]), "value": x31, "constraint": "additionalProperties", "expected": false} | is_object(v); some x30, x31 in v; not _s0_additionalProperties1_known(x30)]
}

_check(v, p) := [] if {
	is_object(v)
	x39 := object.get(v, "count", 1)
	_is_int(x39)
	x39 >= 1
	x39 <= 1000
	x40 := v.mode
	x40 in ["read", "write", "append"]
	x41 := v.path
	is_string(x41)
	count(x41) <= 4096
	regex.match("^/workspace/", x41)
	x42 := object.get(v, "tags", [])
	is_array(x42)
	count(x42) <= 30
	every x43 in x42 {
		is_string(x43)
		regex.match("^[a-z][a-z0-9-]*$", x43)
	}
	count(object.remove(v, {"count", "mode", "path", "tags"})) == 0
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

_esc(k) := replace(replace(k, "~", "~0"), "/", "~1")
