package mcpx.rules.s_855db06e6978e161

violations[key] := vs if {
	some key, t in data.mcpx.steps.rules.targets.s_855db06e6978e161
	vs := _check(t.value, t.path)
}

_v2(v) if {
	is_number(v)
	v > 0
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
	_mult(v, 1, 1, 100, 2, [1, 10, 100])
}

_v1(v) if {
	is_number(v)
	v > 0
	_v1_number1(v)
}

_has(o, k) if _ = o[k]

_v0_prop1(v) if not _has(v, "amount")

_v0_prop1(v) if {
	_v1(v.amount)
}

_v4(v) if {
	v == "EUR"
}

_v5(v) if {
	v == "USD"
}

_v6_string1(v) if not is_string(v)

_v6_string1(v) if {
	is_string(v)
	regex.match("^X[A-Z]{2}$", v)
}

_v6(v) if {
	_v6_string1(v)
}

_v3_anyOf1(v) if {
	v == "EUR"
}

_v3_anyOf1(v) if {
	v == "USD"
}

_v3_anyOf1(v) if {
	_v6_string1(v)
}

_v3(v) if {
	_v3_anyOf1(v)
}

_v0_prop2(v) if not _has(v, "currency")

_v0_prop2(v) if {
	x1 := v.currency
	_v3_anyOf1(x1)
}

_dup(a) if {
	s := sort(a)
	some i, x in s
	i > 0
	x == s[i - 1]
}

_v8(v) if {
	v == "approved"
}

_v7(v) if {
	is_array(v)
	not _dup(v)
	nc := count([1 | some x in v; x == "approved"])
	nc >= 1
	nc <= 1
}

_v0_prop3(v) if not _has(v, "labels")

_v0_prop3(v) if {
	_v7(v.labels)
}

_v10_object1(v) if not is_object(v)

_v10_object1(v) if {
	is_object(v)
	_has(v, "iban")
}

_v10(v) if {
	_v10_object1(v)
}

_v11_object1(v) if not is_object(v)

_v11_object1(v) if {
	is_object(v)
	_has(v, "account")
}

_v11(v) if {
	_v11_object1(v)
}

_v9(v) if {
	count([1 | _v10_object1(v)]) + count([1 | _v11_object1(v)]) == 1
}

_v0_prop4(v) if not _has(v, "target")

_v0_prop4(v) if {
	_v9(v.target)
}

_v0_dependentRequired5(v) if not _has(v, "amount")

_v0_dependentRequired5(v) if {
	_has(v, "currency")
}

_v12_object1(v) if not is_object(v)

_v12_object1(v) if {
	is_object(v)
	_has(v, "cash")
}

_v12(v) if {
	_v12_object1(v)
}

_v14(v) if {
	v == "USD"
}

_v13_object1(v) if not is_object(v)

_v13_object1(v) if {
	is_object(v)
	x2 := v.currency
	x2 == "USD"
}

_v13(v) if {
	_v13_object1(v)
}

_v16_number1(v) if not is_number(v)

_v16_number1(v) if {
	is_number(v)
	v <= 10000
}

_v16(v) if {
	_v16_number1(v)
}

_v15_prop1(v) if not _has(v, "amount")

_v15_prop1(v) if {
	x3 := v.amount
	_v16_number1(x3)
}

_v15_object2(v) if not is_object(v)

_v15_object2(v) if {
	is_object(v)
	_v15_prop1(v)
}

_v15(v) if {
	_v15_object2(v)
}

_v18_number1(v) if not is_number(v)

_v18_number1(v) if {
	is_number(v)
	v <= 5000
}

_v18(v) if {
	_v18_number1(v)
}

_v17_prop1(v) if not _has(v, "amount")

_v17_prop1(v) if {
	x4 := v.amount
	_v18_number1(x4)
}

_v17_object2(v) if not is_object(v)

_v17_object2(v) if {
	is_object(v)
	_v17_prop1(v)
}

_v17(v) if {
	_v17_object2(v)
}

_v0_if6(v) if {
	_v13_object1(v)
	_v15_object2(v)
}

_v0_if6(v) if {
	not _v13(v)
	_v17_object2(v)
}

_v0(v) if {
	is_object(v)
	_v0_prop1(v)
	_v0_prop2(v)
	_v0_prop3(v)
	_v0_prop4(v)
	_v0_dependentRequired5(v)
	not _v12(v)
	_v0_if6(v)
}

default _s0_type1(_, _) := []

_s0_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "object"}] if {
	not is_object(v)
}

default _s0_dependentRequired2(_, _) := []

_s0_dependentRequired2(v, p) := [{"path": p, "value": v, "constraint": "dependentRequired", "expected": {"amount": ["currency"]}, "detail": concat("", ["missing property ", json.marshal(k), " required by ", "\"amount\""])} | some k in ["currency"]; not _has(v, k)] if {
	is_object(v)
	_has(v, "amount")
}

default _s2_type1(_, _) := []

_s2_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "number"}] if {
	not is_number(v)
}

default _s2_exclusiveMinimum2(_, _) := []

_s2_exclusiveMinimum2(v, p) := [{"path": p, "value": v, "constraint": "exclusiveMinimum", "expected": 0}] if {
	is_number(v)
	v <= 0
}

_s2(v, p) := array.concat(_s2_type1(v, p), _s2_exclusiveMinimum2(v, p))

default _s1_multipleOf1(_, _) := []

_s1_multipleOf1(v, p) := [{"path": p, "value": v, "constraint": "multipleOf", "expected": 0.01}] if {
	is_number(v)
	not _mult(v, 1, 1, 100, 2, [1, 10, 100])
}

_s1(v, p) := array.concat(_s2(v, p), _s1_multipleOf1(v, p))

default _s0_properties3(_, _) := []

_s0_properties3(v, p) := _s1(x, concat("", [p, "/amount"])) if {
	is_object(v)
	x := v.amount
}

default _s4_const1(_, _) := []

_s4_const1(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "EUR"}] if {
	v != "EUR"
}

_s4(v, p) := _s4_const1(v, p)

default _s5_const1(_, _) := []

_s5_const1(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "USD"}] if {
	v != "USD"
}

_s5(v, p) := _s5_const1(v, p)

default _s6_pattern1(_, _) := []

_s6_pattern1(v, p) := [{"path": p, "value": v, "constraint": "pattern", "expected": "^X[A-Z]{2}$"}] if {
	is_string(v)
	not regex.match("^X[A-Z]{2}$", v)
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
	not _s3_anyOf1_ok(v)
}

_s3(v, p) := _s3_anyOf1(v, p)

default _s0_properties4(_, _) := []

_s0_properties4(v, p) := _s3(x, concat("", [p, "/currency"])) if {
	is_object(v)
	x := v.currency
}

default _s7_type1(_, _) := []

_s7_type1(v, p) := [{"path": p, "value": v, "constraint": "type", "expected": "array"}] if {
	not is_array(v)
}

default _s7_uniqueItems2(_, _) := []

_s7_uniqueItems2(v, p) := [{"path": p, "value": v, "constraint": "uniqueItems", "expected": true}] if {
	is_array(v)
	_dup(v)
}

default _s8_const1(_, _) := []

_s8_const1(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "approved"}] if {
	v != "approved"
}

_s8(v, p) := _s8_const1(v, p)

_s7_ccount3(v) := count([1 | some e in v; _v8(e)])

default _s7_contains4(_, _) := []

_s7_contains4(v, p) := [{"path": p, "value": v, "constraint": "contains", "expected": {"const": "approved"}}] if {
	is_array(v)
	_s7_ccount3(v) < 1
}

default _s7_maxContains5(_, _) := []

_s7_maxContains5(v, p) := [{"path": p, "value": v, "constraint": "maxContains", "expected": 1}] if {
	is_array(v)
	_s7_ccount3(v) > 1
}

_s7(v, p) := array.concat(array.concat(array.concat(_s7_type1(v, p), _s7_uniqueItems2(v, p)), _s7_contains4(v, p)), _s7_maxContains5(v, p))

default _s0_properties5(_, _) := []

_s0_properties5(v, p) := _s7(x, concat("", [p, "/labels"])) if {
	is_object(v)
	x := v.labels
}

default _s10_required1(_, _) := []

_s10_required1(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["iban"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["iban"]; not _has(v, k)] if {
	is_object(v)
}

_s10(v, p) := _s10_required1(v, p)

default _s11_required1(_, _) := []

_s11_required1(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["account"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["account"]; not _has(v, k)] if {
	is_object(v)
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
	is_object(v)
	x := v.target
}

default _s12_required1(_, _) := []

_s12_required1(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["cash"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["cash"]; not _has(v, k)] if {
	is_object(v)
}

_s12(v, p) := _s12_required1(v, p)

default _s0_not7(_, _) := []

_s0_not7(v, p) := [{"path": p, "value": v, "constraint": "not", "expected": {"required": ["cash"]}}] if {
	_v12(v)
}

default _s13_required1(_, _) := []

_s13_required1(v, p) := [{"path": p, "value": v, "constraint": "required", "expected": ["currency"], "detail": concat("", ["missing property ", json.marshal(k)])} | some k in ["currency"]; not _has(v, k)] if {
	is_object(v)
}

default _s14_const1(_, _) := []

_s14_const1(v, p) := [{"path": p, "value": v, "constraint": "const", "expected": "USD"}] if {
	v != "USD"
}

_s14(v, p) := _s14_const1(v, p)

default _s13_properties2(_, _) := []

_s13_properties2(v, p) := _s14(x, concat("", [p, "/currency"])) if {
	is_object(v)
	x := v.currency
}

_s13(v, p) := array.concat(_s13_required1(v, p), _s13_properties2(v, p))

default _s16_maximum1(_, _) := []

_s16_maximum1(v, p) := [{"path": p, "value": v, "constraint": "maximum", "expected": 10000}] if {
	is_number(v)
	v > 10000
}

_s16(v, p) := _s16_maximum1(v, p)

default _s15_properties1(_, _) := []

_s15_properties1(v, p) := _s16(x, concat("", [p, "/amount"])) if {
	is_object(v)
	x := v.amount
}

_s15(v, p) := _s15_properties1(v, p)

default _s18_maximum1(_, _) := []

_s18_maximum1(v, p) := [{"path": p, "value": v, "constraint": "maximum", "expected": 5000}] if {
	is_number(v)
	v > 5000
}

_s18(v, p) := _s18_maximum1(v, p)

default _s17_properties1(_, _) := []

_s17_properties1(v, p) := _s18(x, concat("", [p, "/amount"])) if {
	is_object(v)
	x := v.amount
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
