package schemarego

// Helper rules a generated module includes when it uses them. They are
// fixed Rego; none of them reads a value from the schema. Each is written so
// that no builtin can fail on any JSON value: numbers are never converted
// through floats, to_number is never called, and % only sees integers.
var helperSrc = map[string]string{
	// presence, not truth: a false or null member is present
	"_has": `_has(o, k) if _ = o[k]`,

	// one JSON Pointer reference token
	"_esc": `_esc(k) := replace(replace(k, "~", "~0"), "/", "~1")`,

	// integer = a number whose value has no fractional part, decided on
	// its decimal text (1.0, 1e308 and 1e400 are integers)
	// (the first body is the common case: a number written without a
	// fraction or an exponent)
	"_is_int": `_is_int(v) if {
	is_number(v)
	regex.match(` + "`" + `^-?[0-9]+$` + "`" + `, json.marshal(v))
}

_is_int(v) if {
	is_number(v)
	[d, e] := _dec(v)
	_int_de(d, e)
}

_int_de(d, _) if d == 0

_int_de(_, e) if e >= 0`,

	// _dec(v) is [d, e] with |v| = d * 10^e, d an integer without trailing
	// zeros (0 for zero), read exactly from the number's decimal text
	"_dec": `_dec(v) := [_unum(s), e] if {
	m := regex.find_all_string_submatch_n(` + "`" + `^-?([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$` + "`" + `, json.marshal(v), 1)[0]
	ds := concat("", [m[1], m[2]])
	tr := trim_right(ds, "0")
	s := trim_left(tr, "0")
	e := (_exp(m[3]) - count(m[2])) + (count(ds) - count(tr))
}

_unum(s) := 0 if s == ""
else := json.unmarshal(s)

_exp(x) := 0 - _unum(trim_left(x, "-0")) if startswith(x, "-")
else := _unum(trim_left(x, "+0"))`,

	// v is a multiple of a/b (lowest terms); r is a without its factors 2
	// and 5, k the largest power of 2 or 5 in a or b, pows 10^0..10^k
	"_mult": `_mult(v, a, r, b, k, pows) if {
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
}`,

	// two items equal as JSON values (1 == 1.0, deep); sort orders by
	// OPA's total order, in which equal values are adjacent
	"_dup": `_dup(a) if {
	s := sort(a)
	some i, x in s
	i > 0
	x == s[i - 1]
}`,

	"_brdetail": `_brdetail(i, vs) := sprintf("branch %d: %s at %s", [i, vs[0].constraint, json.marshal(vs[0].path)]) if count(vs) > 0
else := sprintf("branch %d matched", [i])`,

	"_oneof_detail": `_oneof_detail(r, m) := concat("", ["no branch matched: ", concat("; ", [_brdetail(i, vs) | some i, vs in r])]) if count(m) == 0
else := concat("", ["branches ", concat(", ", [format_int(i, 10) | some i in m]), " matched, exactly one must"])`,
}

var helperDeps = map[string][]string{
	"_is_int":       {"_dec"},
	"_mult":         {"_dec"},
	"_oneof_detail": {"_brdetail"},
}
