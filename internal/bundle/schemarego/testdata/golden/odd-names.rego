package mcpx.rules.s_9bacdcb29cce5f5d

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_9bacdcb29cce5f5d
	vs := _check(t.value, t.path)
}

_v1(v) if {
	x1 := v
	x1 == "\"}; allow := true; x := {\""
}

_v2(v) if {
	x3 := v
	x3 in ["\u0000", "\u0007\u000b", "😀", "\\u0041"]
}

_has(o, k) if _ = o[k]

_v0_prop1(v) if not _has(v, "c/d~e")

_v0_prop1(v) if {
	x4 := v["c/d~e"]
	x4 in ["\u0000", "\u0007\u000b", "😀", "\\u0041"]
}

_v3_string1(v) if not is_string(v)

_v3_string1(v) if {
	is_string(v)
	x5 := v
	regex.match("^[\\\\\"`]+$", x5)
}

_v3(v) if {
	x6 := v
	_v3_string1(x6)
}

_v0_prop2(v) if not _has(v, "import")

_v0_prop2(v) if {
	x7 := v.import
	_v3_string1(x7)
}

_v4(v) if {
	x8 := v
	is_null(x8)
}

_v0_prop3(v) if not _has(v, "input.x")

_v0_prop3(v) if {
	x9 := v["input.x"]
	is_null(x9)
}

_v0_patternProperties4(k, _) if not regex.match("^\\$\\{.*\\}$", k)

_v5_string1(v) if not is_string(v)

_v5_string1(v) if {
	is_string(v)
	x10 := v
	count(x10) <= 8
}

_v5(v) if {
	x11 := v
	_v5_string1(x11)
}

_v0(v) if {
	x13 := v
	is_object(x13)
	x2 := v["a\"b"]
	x2 == "\"}; allow := true; x := {\""
	x14 := v
	_v0_prop1(x14)
	x15 := v
	_v0_prop2(x15)
	x16 := v
	_v0_prop3(x16)
	x17 := v
	every k, x in x17 {
		_v0_patternProperties4(k, x)
	}
	x18 := v
	every k, _ in x18 {
		x12 := k
		_v5_string1(x12)
	}
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "object"}] if {
	x19 := v
	not is_object(x19)
}

default _s0_required2(_, _) := []

_s0_required2(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["a\"b"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["a\"b"]; not _has(v, k)] if {
	x20 := v
	is_object(x20)
}

default _s1_const1(_, _) := []

_s1_const1(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "\"}; allow := true; x := {\""}] if {
	x21 := v
	x21 != "\"}; allow := true; x := {\""
}

_s1(v, p) := _s1_const1(v, p)

default _s0_properties3(_, _) := []

_s0_properties3(v, p) := _s1(x, concat("", [p, "/a\"b"])) if {
	x22 := v
	is_object(x22)
	x23 := v
	x := x23["a\"b"]
}

default _s2_enum1(_, _) := []

_s2_enum1(v, p) := [{"path": p, "value": v, "constraint": "enum", "expected": ["\u0000", "\u0007\u000b", "😀", "\\u0041"]}] if {
	x24 := v
	not x24 in ["\u0000", "\u0007\u000b", "😀", "\\u0041"]
}

_s2(v, p) := _s2_enum1(v, p)

default _s0_properties4(_, _) := []

_s0_properties4(v, p) := _s2(x, concat("", [p, "/c~1d~0e"])) if {
	x25 := v
	is_object(x25)
	x26 := v
	x := x26["c/d~e"]
}

default _s3_pattern1(_, _) := []

_s3_pattern1(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^[\\\\\"`]+$"}] if {
	x27 := v
	is_string(x27)
	x28 := v
	not regex.match("^[\\\\\"`]+$", x28)
}

_s3(v, p) := _s3_pattern1(v, p)

default _s0_properties5(_, _) := []

_s0_properties5(v, p) := _s3(x, concat("", [p, "/import"])) if {
	x29 := v
	is_object(x29)
	x30 := v
	x := x30.import
}

default _s4_type1(_, _) := []

_s4_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "null"}] if {
	x31 := v
	not is_null(x31)
}

_s4(v, p) := _s4_type1(v, p)

default _s0_properties6(_, _) := []

_s0_properties6(v, p) := _s4(x, concat("", [p, "/input.x"])) if {
	x32 := v
	is_object(x32)
	x33 := v
	x := x33["input.x"]
}

_s5(v, p) := [{"path": p, "value": v, "constraint": "false", "expected": false}]

_esc(k) := replace(replace(k, "~", "~0"), "/", "~1")

default _s0_patternProperties7(_, _) := []

_s0_patternProperties7(v, p) := [{"path": concat("/", [p, _esc(k)]), "value": e, "constraint": "patternProperties", "expected": false} | some k, e in v; regex.match("^\\$\\{.*\\}$", k)] if {
	x34 := v
	is_object(x34)
}

default _s6_maxLength1(_, _) := []

_s6_maxLength1(v, p) := [{"path": p, "value": v, "constraint": "maxLength", "expected": 8}] if {
	x35 := v
	is_string(x35)
	x36 := v
	count(x36) > 8
}

_s6(v, p) := _s6_maxLength1(v, p)

default _s0_propertyNames8(_, _) := []

_s0_propertyNames8(v, p) := [x | some k, _ in v; some x in _s6(k, concat("/", [p, _esc(k)]))] if {
	x37 := v
	is_object(x37)
}

_s0(v, p) := array.concat(array.concat(array.concat(array.concat(array.concat(array.concat(array.concat(_s0_type1(v, p), _s0_required2(v, p)), _s0_properties3(v, p)), _s0_properties4(v, p)), _s0_properties5(v, p)), _s0_properties6(v, p)), _s0_patternProperties7(v, p)), _s0_propertyNames8(v, p))

_check(v, p) := [] if {
	_v0(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]
