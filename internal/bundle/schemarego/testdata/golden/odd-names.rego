package mcpx.rules.s_9bacdcb29cce5f5d

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_9bacdcb29cce5f5d
	vs := _check(t.value, t.path)
}

_v1(v) if {
	v == "\"}; allow := true; x := {\""
}

_v2(v) if {
	v in ["\u0000", "\u0007\u000b", "😀", "\\u0041"]
}

_has(o, k) if _ = o[k]

_v0_prop1(v) if not _has(v, "c/d~e")

_v0_prop1(v) if {
	x2 := v["c/d~e"]
	x2 in ["\u0000", "\u0007\u000b", "😀", "\\u0041"]
}

_v3_string1(v) if not is_string(v)

_v3_string1(v) if {
	is_string(v)
	regex.match("^[\\\\\"`]+$", v)
}

_v3(v) if {
	_v3_string1(v)
}

_v0_prop2(v) if not _has(v, "import")

_v0_prop2(v) if {
	x3 := v.import
	_v3_string1(x3)
}

_v4(v) if {
	is_null(v)
}

_v0_prop3(v) if not _has(v, "input.x")

_v0_prop3(v) if {
	x4 := v["input.x"]
	is_null(x4)
}

_v0_patternProperties4(k, _) if not regex.match("^\\$\\{.*\\}$", k)

_v5_string1(v) if not is_string(v)

_v5_string1(v) if {
	is_string(v)
	count(v) <= 8
}

_v5(v) if {
	_v5_string1(v)
}

_v0(v) if {
	is_object(v)
	x1 := v["a\"b"]
	x1 == "\"}; allow := true; x := {\""
	_v0_prop1(v)
	_v0_prop2(v)
	_v0_prop3(v)
	every k, x in v {
		_v0_patternProperties4(k, x)
	}
	every k, _ in v {
		_v5_string1(k)
	}
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "object"}] if {
	not is_object(v)
}

default _s0_required2(_, _) := []

_s0_required2(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["a\"b"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["a\"b"]; not _has(v, k)] if {
	is_object(v)
}

default _s1_const1(_, _) := []

_s1_const1(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "\"}; allow := true; x := {\""}] if {
	v != "\"}; allow := true; x := {\""
}

_s1(v, p) := _s1_const1(v, p)

default _s0_properties3(_, _) := []

_s0_properties3(v, p) := _s1(x, concat("", [p, "/a\"b"])) if {
	is_object(v)
	x := v["a\"b"]
}

default _s2_enum1(_, _) := []

_s2_enum1(v, p) := [{"path": p, "value": v, "constraint": "enum", "expected": ["\u0000", "\u0007\u000b", "😀", "\\u0041"]}] if {
	not v in ["\u0000", "\u0007\u000b", "😀", "\\u0041"]
}

_s2(v, p) := _s2_enum1(v, p)

default _s0_properties4(_, _) := []

_s0_properties4(v, p) := _s2(x, concat("", [p, "/c~1d~0e"])) if {
	is_object(v)
	x := v["c/d~e"]
}

default _s3_pattern1(_, _) := []

_s3_pattern1(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^[\\\\\"`]+$"}] if {
	is_string(v)
	not regex.match("^[\\\\\"`]+$", v)
}

_s3(v, p) := _s3_pattern1(v, p)

default _s0_properties5(_, _) := []

_s0_properties5(v, p) := _s3(x, concat("", [p, "/import"])) if {
	is_object(v)
	x := v.import
}

default _s4_type1(_, _) := []

_s4_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "null"}] if {
	not is_null(v)
}

_s4(v, p) := _s4_type1(v, p)

default _s0_properties6(_, _) := []

_s0_properties6(v, p) := _s4(x, concat("", [p, "/input.x"])) if {
	is_object(v)
	x := v["input.x"]
}

_s5(v, p) := [{"path": p, "value": v, "constraint": "false", "expected": false}]

_esc(k) := replace(replace(k, "~", "~0"), "/", "~1")

default _s0_patternProperties7(_, _) := []

_s0_patternProperties7(v, p) := [{"path": concat("/", [p, _esc(k)]), "value": e, "constraint": "patternProperties", "expected": false} | some k, e in v; regex.match("^\\$\\{.*\\}$", k)] if {
	is_object(v)
}

default _s6_maxLength1(_, _) := []

_s6_maxLength1(v, p) := [{"path": p, "value": v, "constraint": "maxLength", "expected": 8}] if {
	is_string(v)
	count(v) > 8
}

_s6(v, p) := _s6_maxLength1(v, p)

default _s0_propertyNames8(_, _) := []

_s0_propertyNames8(v, p) := [x | some k, _ in v; some x in _s6(k, concat("/", [p, _esc(k)]))] if {
	is_object(v)
}

_s0(v, p) := array.concat(array.concat(array.concat(array.concat(array.concat(array.concat(array.concat(_s0_type1(v, p), _s0_required2(v, p)), _s0_properties3(v, p)), _s0_properties4(v, p)), _s0_properties5(v, p)), _s0_properties6(v, p)), _s0_patternProperties7(v, p)), _s0_propertyNames8(v, p))

_check(v, p) := [] if {
	_v0(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]
