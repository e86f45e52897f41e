package mcpx.rules.s_855db06e6978e161

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_855db06e6978e161
	vs := _check(t.value, t.path)
}

_v2(v) if {
	x1 := v
	is_number(x1)
	x2 := v
	x2 > 0
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

_v1_number1(v) if not is_number(v)

_v1_number1(v) if {
	is_number(v)
	x5 := v
	_mult(x5, 1, 1, 100, 2, [1, 10, 100])
}

_v1(v) if {
	x3 := v
	is_number(x3)
	x4 := v
	x4 > 0
	x6 := v
	_v1_number1(x6)
}

_has(o, k) if _ = o[k]

_v0_prop1(v) if not _has(v, "amount")

_v0_prop1(v) if {
	x7 := v.amount
	_v1(x7)
}

_v4(v) if {
	x8 := v
	x8 == "EUR"
}

_v5(v) if {
	x9 := v
	x9 == "USD"
}

_v6_string1(v) if not is_string(v)

_v6_string1(v) if {
	is_string(v)
	x10 := v
	regex.match("^X[A-Z]{2}$", x10)
}

_v6(v) if {
	x11 := v
	_v6_string1(x11)
}

_v3_anyOf1(v) if {
	x12 := v
	x12 == "EUR"
}

_v3_anyOf1(v) if {
	x13 := v
	x13 == "USD"
}

_v3_anyOf1(v) if {
	x14 := v
	_v6_string1(x14)
}

_v3(v) if {
	x15 := v
	_v3_anyOf1(x15)
}

_v0_prop2(v) if not _has(v, "currency")

_v0_prop2(v) if {
	x16 := v.currency
	_v3_anyOf1(x16)
}

_dup(a) if {
	s := sort(a)
	some i, x in s
	i > 0
	x == s[i - 1]
}

_v8(v) if {
	x17 := v
	x17 == "approved"
}

_v7(v) if {
	x19 := v
	is_array(x19)
	x20 := v
	not _dup(x20)
	x21 := v
	nc := count([1 | some x in x21; x18 := x; x18 == "approved"])
	nc >= 1
	nc <= 1
}

_v0_prop3(v) if not _has(v, "labels")

_v0_prop3(v) if {
	x22 := v.labels
	_v7(x22)
}

_v10_object1(v) if not is_object(v)

_v10_object1(v) if {
	is_object(v)
	x23 := v
	_has(x23, "iban")
}

_v10(v) if {
	x24 := v
	_v10_object1(x24)
}

_v11_object1(v) if not is_object(v)

_v11_object1(v) if {
	is_object(v)
	x26 := v
	_has(x26, "account")
}

_v11(v) if {
	x27 := v
	_v11_object1(x27)
}

_v9(v) if {
	x29 := v
	count([1 | x25 := x29; _v10_object1(x25)]) + count([1 | x28 := x29; _v11_object1(x28)]) == 1
}

_v0_prop4(v) if not _has(v, "target")

_v0_prop4(v) if {
	x30 := v.target
	_v9(x30)
}

_v0_dependentRequired5(v) if not _has(v, "amount")

_v0_dependentRequired5(v) if {
	_has(v, "currency")
}

_v12_object1(v) if not is_object(v)

_v12_object1(v) if {
	is_object(v)
	x31 := v
	_has(x31, "cash")
}

_v12(v) if {
	x32 := v
	_v12_object1(x32)
}

_v14(v) if {
	x33 := v
	x33 == "USD"
}

_v13_object1(v) if not is_object(v)

_v13_object1(v) if {
	is_object(v)
	x34 := v.currency
	x34 == "USD"
}

_v13(v) if {
	x35 := v
	_v13_object1(x35)
}

_v16_number1(v) if not is_number(v)

_v16_number1(v) if {
	is_number(v)
	x36 := v
	x36 <= 10000
}

_v16(v) if {
	x37 := v
	_v16_number1(x37)
}

_v15_prop1(v) if not _has(v, "amount")

_v15_prop1(v) if {
	x38 := v.amount
	_v16_number1(x38)
}

_v15_object2(v) if not is_object(v)

_v15_object2(v) if {
	is_object(v)
	x39 := v
	_v15_prop1(x39)
}

_v15(v) if {
	x40 := v
	_v15_object2(x40)
}

_v18_number1(v) if not is_number(v)

_v18_number1(v) if {
	is_number(v)
	x41 := v
	x41 <= 5000
}

_v18(v) if {
	x42 := v
	_v18_number1(x42)
}

_v17_prop1(v) if not _has(v, "amount")

_v17_prop1(v) if {
	x43 := v.amount
	_v18_number1(x43)
}

_v17_object2(v) if not is_object(v)

_v17_object2(v) if {
	is_object(v)
	x44 := v
	_v17_prop1(x44)
}

_v17(v) if {
	x45 := v
	_v17_object2(x45)
}

_v0_if6(v) if {
	x46 := v
	_v13_object1(x46)
	x47 := v
	_v15_object2(x47)
}

_v0_if6(v) if {
	not _v13(v)
	x48 := v
	_v17_object2(x48)
}

_v0(v) if {
	x49 := v
	is_object(x49)
	x50 := v
	_v0_prop1(x50)
	x51 := v
	_v0_prop2(x51)
	x52 := v
	_v0_prop3(x52)
	x53 := v
	_v0_prop4(x53)
	x54 := v
	_v0_dependentRequired5(x54)
	x55 := v
	not _v12(x55)
	x56 := v
	_v0_if6(x56)
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "object"}] if {
	x57 := v
	not is_object(x57)
}

default _s0_dependentRequired2(_, _) := []

_s0_dependentRequired2(v, p) := [{"path": p, "value": v, "constraint": "dependentRequired", "expected": {"amount": ["currency"]}, "detail": concat("", ["missing property ", json.marshal(k), " required by ", "\"amount\""])} | some k in ["currency"]; not _has(v, k)] if {
	x58 := v
	is_object(x58)
	x59 := v
	_has(x59, "amount")
}

default _s2_type1(_, _) := []

_s2_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "number"}] if {
	x60 := v
	not is_number(x60)
}

default _s2_exclusiveMinimum2(_, _) := []

_s2_exclusiveMinimum2(v, p) := [{"path": p, "value": v, "constraint": "exclusiveMinimum", "expected": 0}] if {
	x61 := v
	is_number(x61)
	x62 := v
	x62 <= 0
}

_s2(v, p) := array.concat(_s2_type1(v, p), _s2_exclusiveMinimum2(v, p))

default _s1_multipleOf1(_, _) := []

_s1_multipleOf1(v, p) := [{"path": p, "value": v, "constraint": "multipleOf", "expected": 0.01}] if {
	x63 := v
	is_number(x63)
	x64 := v
	not _mult(x64, 1, 1, 100, 2, [1, 10, 100])
}

_s1(v, p) := array.concat(_s2(v, p), _s1_multipleOf1(v, p))

default _s0_properties3(_, _) := []

_s0_properties3(v, p) := _s1(x, concat("", [p, "/amount"])) if {
	x65 := v
	is_object(x65)
	x66 := v
	x := x66.amount
}

default _s4_const1(_, _) := []

_s4_const1(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "EUR"}] if {
	x67 := v
	x67 != "EUR"
}

_s4(v, p) := _s4_const1(v, p)

default _s5_const1(_, _) := []

_s5_const1(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "USD"}] if {
	x68 := v
	x68 != "USD"
}

_s5(v, p) := _s5_const1(v, p)

default _s6_pattern1(_, _) := []

_s6_pattern1(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^X[A-Z]{2}$"}] if {
	x69 := v
	is_string(x69)
	x70 := v
	not regex.match("^X[A-Z]{2}$", x70)
}

_s6(v, p) := _s6_pattern1(v, p)

_brdetail(i, vs) := sprintf("branch %d: %s at %s", [i, vs[0].constraint, json.marshal(vs[0].path)]) if count(vs) > 0

else := sprintf("branch %d matched", [i])

_s3_anyOf1_ok(_) if false

_s3_anyOf1_ok(v) if _v4(v)

_s3_anyOf1_ok(v) if _v5(v)

_s3_anyOf1_ok(v) if _v6(v)

default _s3_anyOf1(_, _) := []

_s3_anyOf1(v, p) := [{"path": p, "value": v, "constraint": "anyOf", "expected": [{"const": "EUR"}, {"const": "USD"}, {"pattern": "^X[A-Z]{2}$"}], "detail": concat("", ["no branch matched: ", concat("; ", [_brdetail(i, vs) | some i, vs in [_s4(v, p), _s5(v, p), _s6(v, p)]])])}] if {
	x71 := v
	not _s3_anyOf1_ok(x71)
}

_s3(v, p) := _s3_anyOf1(v, p)

default _s0_properties4(_, _) := []

_s0_properties4(v, p) := _s3(x, concat("", [p, "/currency"])) if {
	x72 := v
	is_object(x72)
	x73 := v
	x := x73.currency
}

default _s7_type1(_, _) := []

_s7_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "array"}] if {
	x74 := v
	not is_array(x74)
}

default _s7_uniqueItems2(_, _) := []

_s7_uniqueItems2(v, p) := [{"path": p, "value": v, "constraint": "uniqueItems", "expected": true}] if {
	x75 := v
	is_array(x75)
	x76 := v
	_dup(x76)
}

default _s8_const1(_, _) := []

_s8_const1(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "approved"}] if {
	x77 := v
	x77 != "approved"
}

_s8(v, p) := _s8_const1(v, p)

_s7_ccount3(v) := count([1 | some e in v; _v8(e)])

default _s7_contains4(_, _) := []

_s7_contains4(v, p) := [{"path": p, "value": v, "constraint": "contains", "expected": {"const": "approved"}}] if {
	x78 := v
	is_array(x78)
	x79 := v
	_s7_ccount3(x79) < 1
}

default _s7_maxContains5(_, _) := []

_s7_maxContains5(v, p) := [{"path": p, "value": v, "constraint": "maxContains", "expected": 1}] if {
	x80 := v
	is_array(x80)
	x81 := v
	_s7_ccount3(x81) > 1
}

_s7(v, p) := array.concat(array.concat(array.concat(_s7_type1(v, p), _s7_uniqueItems2(v, p)), _s7_contains4(v, p)), _s7_maxContains5(v, p))

default _s0_properties5(_, _) := []

_s0_properties5(v, p) := _s7(x, concat("", [p, "/labels"])) if {
	x82 := v
	is_object(x82)
	x83 := v
	x := x83.labels
}

default _s10_required1(_, _) := []

_s10_required1(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["iban"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["iban"]; not _has(v, k)] if {
	x84 := v
	is_object(x84)
}

_s10(v, p) := _s10_required1(v, p)

default _s11_required1(_, _) := []

_s11_required1(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["account"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["account"]; not _has(v, k)] if {
	x85 := v
	is_object(x85)
}

_s11(v, p) := _s11_required1(v, p)

_s9_oneOf1_r(v, p) := [_s10(v, p), _s11(v, p)]

_s9_oneOf1_m(r) := [i | some i, vs in r; count(vs) == 0]

_s9_oneOf1(v, p) := [{"path": p, "value": v, "constraint": "oneOf", "expected": [{"required": ["iban"]}, {"required": ["account"]}], "detail": d}] if {
	r := _s9_oneOf1_r(v, p)
	m := _s9_oneOf1_m(r)
	count(m) != 1
	d := _oneof_detail(r, m)
}

default _s9_oneOf1(_, _) := []

_oneof_detail(r, m) := concat("", ["no branch matched: ", concat("; ", [_brdetail(i, vs) | some i, vs in r])]) if count(m) == 0

else := concat("", ["branches ", concat(", ", [format_int(i, 10) | some i in m]), " matched, exactly one must"])

_s9(v, p) := _s9_oneOf1(v, p)

default _s0_properties6(_, _) := []

_s0_properties6(v, p) := _s9(x, concat("", [p, "/target"])) if {
	x86 := v
	is_object(x86)
	x87 := v
	x := x87.target
}

default _s12_required1(_, _) := []

_s12_required1(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["cash"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["cash"]; not _has(v, k)] if {
	x88 := v
	is_object(x88)
}

_s12(v, p) := _s12_required1(v, p)

default _s0_not7(_, _) := []

_s0_not7(v, p) := [{"path": p, "value": v, "constraint": "not", "expected": {"required": ["cash"]}}] if {
	x89 := v
	_v12(x89)
}

default _s13_required1(_, _) := []

_s13_required1(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["currency"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["currency"]; not _has(v, k)] if {
	x90 := v
	is_object(x90)
}

default _s14_const1(_, _) := []

_s14_const1(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "USD"}] if {
	x91 := v
	x91 != "USD"
}

_s14(v, p) := _s14_const1(v, p)

default _s13_properties2(_, _) := []

_s13_properties2(v, p) := _s14(x, concat("", [p, "/currency"])) if {
	x92 := v
	is_object(x92)
	x93 := v
	x := x93.currency
}

_s13(v, p) := array.concat(_s13_required1(v, p), _s13_properties2(v, p))

default _s16_maximum1(_, _) := []

_s16_maximum1(v, p) := [{"path": p, "value": v, "constraint": "maximum", "expected": 10000}] if {
	x94 := v
	is_number(x94)
	x95 := v
	x95 > 10000
}

_s16(v, p) := _s16_maximum1(v, p)

default _s15_properties1(_, _) := []

_s15_properties1(v, p) := _s16(x, concat("", [p, "/amount"])) if {
	x96 := v
	is_object(x96)
	x97 := v
	x := x97.amount
}

_s15(v, p) := _s15_properties1(v, p)

default _s18_maximum1(_, _) := []

_s18_maximum1(v, p) := [{"path": p, "value": v, "constraint": "maximum", "expected": 5000}] if {
	x98 := v
	is_number(x98)
	x99 := v
	x99 > 5000
}

_s18(v, p) := _s18_maximum1(v, p)

default _s17_properties1(_, _) := []

_s17_properties1(v, p) := _s18(x, concat("", [p, "/amount"])) if {
	x100 := v
	is_object(x100)
	x101 := v
	x := x101.amount
}

_s17(v, p) := _s17_properties1(v, p)

_s0_if8(v, p) := _s15(v, p) if _v13(v)

else := _s17(v, p)

_s0(v, p) := array.concat(array.concat(array.concat(array.concat(array.concat(array.concat(array.concat(_s0_type1(v, p), _s0_dependentRequired2(v, p)), _s0_properties3(v, p)), _s0_properties4(v, p)), _s0_properties5(v, p)), _s0_properties6(v, p)), _s0_not7(v, p)), _s0_if8(v, p))

_check(v, p) := [] if {
	_v0(v)
} else := vs if {
	vs := _s0(v, p)
	count(vs) > 0
} else := [{"path": p, "value": v, "constraint": "$schema", "expected": true, "detail": "internal error: the generated fast and full checks disagree; refusing the value"}]
