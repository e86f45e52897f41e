package mcpx.rules.s_855db06e6978e161

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_855db06e6978e161
	vs := _check(t.value, t.path)
}

_v3_anyOf1(v) if v in ["EUR"]

_v3_anyOf1(v) if v in ["USD"]

_v3_anyOf1(v) if _v6_string1(v)

_v0_prop1(v) if {
	x5 := v.labels
	is_array(x5)
	not _dup(x5)
	x6 := count([1 | some x7 in x5; x7 in ["approved"]])
	x6 >= 1
	x6 <= 1
}

_v0_prop1(v) if not _has(v, "labels")

_v0_prop2(v) if {
	x8 := v.target
	count([1 | _v10_object1(x8)]) + count([1 | _v11_object1(x8)]) == 1
}

_v0_prop2(v) if not _has(v, "target")

_v0_dependentRequired3(v) if _ = v.currency

_v0_dependentRequired3(v) if not _has(v, "amount")

_v0_if4(v) if {
	x12 := v.currency
	x12 in ["USD"]
	x13 := object.get(v, "amount", 10000)
	_v16_number1(x13)
} else := false if {
	x12 := v.currency
	x12 in ["USD"]
} else if {
	x14 := object.get(v, "amount", 5000)
	_v18_number1(x14)
}

_s2(v, p) := [x | some vs in [x16, x17]; some x in vs] if {
	x16 := [{"path": p, "value": v, "constraint": "type", "expected": "number"} | not is_number(v)]
	x17 := [{"path": p, "value": v, "constraint": "exclusiveMinimum", "expected": 0} | is_number(v); v <= 0]
}

_s1(v, p) := [x | some vs in [x18, x19]; some x in vs] if {
	x18 := _s2(v, p)
	x19 := [{"path": p, "value": v, "constraint": "multipleOf", "expected": 0.01} | is_number(v); not _mult(v, 1, 1, 100, 2, [1, 10, 100])]
}

_s4(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "EUR"} | v != "EUR"]

_s5(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "USD"} | v != "USD"]

_s6(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^X[A-Z]{2}$"} | is_string(v); not regex.match("^X[A-Z]{2}$", v)]

_s3(v, p) := [{"path": p, "value": v, "constraint": "anyOf", "expected": [{"const": "EUR"}, {"const": "USD"}, {"pattern": "^X[A-Z]{2}$"}], "detail": concat("", ["no branch matched: ", concat("; ", [_brdetail(x22, x23) | some x22, x23 in [_s4(v, p), _s5(v, p), _s6(v, p)]])])} | not _v3_anyOf1(v)]

_s8(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "approved"} | v != "approved"]

_s7_ccount1(v) := count([1 | some x26 in v; x26 in ["approved"]])

_s7(v, p) := [x | some vs in [x27, x28, x29, x30]; some x in vs] if {
	x27 := [{"path": p, "value": v, "constraint": "type", "expected": "array"} | not is_array(v)]
	x28 := [{"path": p, "value": v, "constraint": "uniqueItems", "expected": true} | is_array(v); _dup(v)]
	x29 := [{"path": p, "value": v, "constraint": "contains", "expected": {"const": "approved"}} | is_array(v); _s7_ccount1(v) < 1]
	x30 := [{"path": p, "value": v, "constraint": "maxContains", "expected": 1} | is_array(v); _s7_ccount1(v) > 1]
}

_s10(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["iban"], "detail": concat("", ["missing property ", json.marshal(x33)])} | is_object(v); some x33 in ["iban"]; not _has(v, x33)]

_s11(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["account"], "detail": concat("", ["missing property ", json.marshal(x34)])} | is_object(v); some x34 in ["account"]; not _has(v, x34)]

_s9(v, p) := [{"path": p, "value": v, "constraint": "oneOf", "expected": [{"required": ["iban"]}, {"required": ["account"]}], "detail": _oneof_detail(x35, x36)} | type_name(v); x35 := [_s10(v, p), _s11(v, p)]; x36 := [x37 | some x37, x38 in x35; count(x38) == 0]; count(x36) != 1]

_s12(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["cash"], "detail": concat("", ["missing property ", json.marshal(x41)])} | is_object(v); some x41 in ["cash"]; not _has(v, x41)]

_s14(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "USD"} | v != "USD"]

_s13(v, p) := [x | some vs in [x45, x46]; some x in vs] if {
	x45 := [{"path": p, "value": v, "constraint": "required", "expected": ["currency"], "detail": concat("", ["missing property ", json.marshal(x42)])} | is_object(v); some x42 in ["currency"]; not _has(v, x42)]
	x46 := [x44 | is_object(v); x43 := v.currency; some x44 in _s14(x43, concat("", [p, "/currency"]))]
}

_s16(v, p) := [{"path": p, "value": v, "constraint": "maximum", "expected": 10000} | is_number(v); v > 10000]

_s15(v, p) := [x48 | is_object(v); x47 := v.amount; some x48 in _s16(x47, concat("", [p, "/amount"]))]

_s18(v, p) := [{"path": p, "value": v, "constraint": "maximum", "expected": 5000} | is_number(v); v > 5000]

_s17(v, p) := [x50 | is_object(v); x49 := v.amount; some x50 in _s18(x49, concat("", [p, "/amount"]))]

_s0_if1(v, p) := _s15(v, p) if {
	_v13_object1(v)
} else := _s17(v, p)

_s0(v, p) := [x | some vs in [x51, x52, x53, x54, x55, x56, x57, x58]; some x in vs] if {
	x51 := [{"path": p, "value": v, "constraint": "type", "expected": "object"} | not is_object(v)]
	x52 := [{"path": p, "value": v, "constraint": "dependentRequired", "expected": {"amount": ["currency"]}, "detail": concat("", ["missing property ", json.marshal(x15), " required by ", "\"amount\""])} | is_object(v); _has(v, "amount"); some x15 in ["currency"]; not _has(v, x15)]
	x53 := [x21 | is_object(v); x20 := v.amount; some x21 in _s1(x20, concat("", [p, "/amount"]))]
	x54 := [x25 | is_object(v); x24 := v.currency; some x25 in _s3(x24, concat("", [p, "/currency"]))]
	x55 := [x32 | is_object(v); x31 := v.labels; some x32 in _s7(x31, concat("", [p, "/labels"]))]
	x56 := [x40 | is_object(v); x39 := v.target; some x40 in _s9(x39, concat("", [p, "/target"]))]
	x57 := [{"path": p, "value": v, "constraint": "not", "expected": {"required": ["cash"]}} | _v12_object1(v)]
	x58 := _s0_if1(v, p)
}

_check(v, p) := [] if {
	is_object(v)
	x59 := object.get(v, "amount", 1)
	is_number(x59)
	x59 > 0
	_mult(x59, 1, 1, 100, 2, [1, 10, 100])
	x60 := object.get(v, "currency", null)
	_v3_anyOf1(x60)
	_v0_prop1(v)
	_v0_prop2(v)
	_v0_dependentRequired3(v)
	not _v12_object1(v)
	_v0_if4(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]

_v6_string1(v) if not is_string(v)

_v6_string1(v) if {
	is_string(v)
	regex.match("^X[A-Z]{2}$", v)
}

_v10_object1(v) if not is_object(v)

_v10_object1(v) if {
	is_object(v)
	_ = v.iban
}

_v11_object1(v) if not is_object(v)

_v11_object1(v) if {
	is_object(v)
	_ = v.account
}

_v12_object1(v) if not is_object(v)

_v12_object1(v) if {
	is_object(v)
	_ = v.cash
}

_v13_object1(v) if not is_object(v)

_v13_object1(v) if {
	is_object(v)
	x9 := v.currency
	x9 in ["USD"]
}

_v16_number1(v) if not is_number(v)

_v16_number1(v) if {
	is_number(v)
	v <= 10000
}

_v18_number1(v) if not is_number(v)

_v18_number1(v) if {
	is_number(v)
	v <= 5000
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

_mult(v, a, r, b, k, pows) if {
	[d, e] := _dec(v)
	_mult_de(d, e, a, r, b, k, pows)
}

_mult_de(d, _, _, _, _, _, _) if d == 0

_mult_de(d, e, _, r, _, k, _) if {
	e >= k
	d % r == 0
}

_mult_de(d, e, a, _, _, k, pows) if {
	e >= 0
	e < k
	(d * pows[e]) % a == 0
}

_mult_de(d, e, a, _, b, k, pows) if {
	e < 0
	0 - e <= k
	(d * b) % (a * pows[0 - e]) == 0
}

_dup(a) if {
	s := sort(a)
	some i, x in s
	i > 0
	x == s[i - 1]
}

_has(o, k) if _ = o[k]

_brdetail(i, vs) := sprintf("branch %d: %s at %s", [i, vs[0].constraint, json.marshal(vs[0].path)]) if count(vs) > 0

else := sprintf("branch %d matched", [i])

_oneof_detail(r, m) := concat("", ["no branch matched: ", concat("; ", [_brdetail(i, vs) | some i, vs in r])]) if count(m) == 0

else := concat("", ["branches ", concat(", ", [format_int(i, 10) | some i in m]), " matched, exactly one must"])
