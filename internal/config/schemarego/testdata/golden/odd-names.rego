package mcpx.rules.s_9bacdcb29cce5f5d

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_9bacdcb29cce5f5d
	vs := _check(t.value, t.path)
}

_v0_patternProperties1(k, _) if not regex.match("^\\$\\{.*\\}$", k)

_s1(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "\"}; allow := true; x := {\""} | v != "\"}; allow := true; x := {\""]

_s2(v, p) := [{"path": p, "value": v, "constraint": "enum", "expected": ["\u0000", "\u0007\u000b", "😀", "\\u0041"]} | not v in ["\u0000", "\u0007\u000b", "😀", "\\u0041"]]

_s3(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^[\\\\\"`]+$"} | is_string(v); not regex.match("^[\\\\\"`]+$", v)]

_s4(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "null"} | not is_null(v)]

_s5(v, p) := [{"path": p, "value": v, "constraint": "false", "expected": false}]

_s6(v, p) := [{"path": p, "value": v, "constraint": "maxLength", "expected": 8} | is_string(v); count(v) > 8]

_s0(v, p) := [x | some vs in [x21, x22, x23, x24, x25, x26, x27, x28]; some x in vs] if {
	x21 := [{"path": p, "value": v, "constraint": "type", "expected": "object"} | not is_object(v)]
	x22 := [{"path": p, "value": v, "constraint": "required", "expected": ["a\"b"], "detail": concat("", ["missing property ", json.marshal(x8)])} | is_object(v); some x8 in ["a\"b"]; not _has(v, x8)]
	x23 := [x10 | is_object(v); x9 := v["a\"b"]; some x10 in _s1(x9, concat("", [p, "/a\"b"]))]
	x24 := [x12 | is_object(v); x11 := v["c/d~e"]; some x12 in _s2(x11, concat("", [p, "/c~1d~0e"]))]
	x25 := [x14 | is_object(v); x13 := v.import; some x14 in _s3(x13, concat("", [p, "/import"]))]
	x26 := [x16 | is_object(v); x15 := v["input.x"]; some x16 in _s4(x15, concat("", [p, "/input.x"]))]
	x27 := [{"path": concat("/", [p, _esc(x17)]), "value": x18, "constraint": "patternProperties", "expected": false} | is_object(v); some x17, x18 in v; regex.match("^\\$\\{.*\\}$", x17)]
	x28 := [x20 | is_object(v); some x19, _ in v; some x20 in _s6(x19, concat("/", [p, _esc(x19)]))]
}

_check(v, p) := [] if {
	is_object(v)
	x29 := v["a\"b"]
	x29 in ["\"}; allow := true; x := {\""]
	x30 := object.get(v, "c/d~e", "\u0000")
	x30 in ["\u0000", "\u0007\u000b", "😀", "\\u0041"]
	x31 := object.get(v, "import", null)
	_v3_string1(x31)
	x32 := object.get(v, "input.x", null)
	is_null(x32)
	every x33, x34 in v {
		_v0_patternProperties1(x33, x34)
	}
	every x35, _ in v {
		_v5_string1(x35)
	}
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]

_v3_string1(v) if not is_string(v)

_v3_string1(v) if {
	is_string(v)
	regex.match("^[\\\\\"`]+$", v)
}

_v5_string1(v) if not is_string(v)

_v5_string1(v) if {
	is_string(v)
	count(v) <= 8
}

_has(o, k) if _ = o[k]

_esc(k) := replace(replace(k, "~", "~0"), "/", "~1")
