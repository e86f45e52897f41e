package engine

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// quickSchema draws a schema from the keywords quickCheck reads, now and
// then with one it does not (so that quickOf must refuse it), nested
// through items and not.
func quickSchema(rng *rand.Rand, depth int) map[string]any {
	s := map[string]any{}
	maybe := func() bool { return rng.IntN(3) == 0 }
	if maybe() {
		types := [][]any{{"string"}, {"array"}, {"string", "array"}, {"integer"}, {"number", "string"}, {"object", "null"}, {"object"}}
		t := types[rng.IntN(len(types))]
		if len(t) == 1 && rng.IntN(2) == 0 {
			s["type"] = t[0]
		} else {
			s["type"] = t
		}
	}
	if maybe() {
		s["minLength"] = rng.IntN(5)
	}
	if maybe() {
		s["maxLength"] = rng.IntN(12)
	}
	if maybe() {
		s["pattern"] = []string{"^a", "b$", "BEGIN [A-Z]* ?PRIVATE KEY", "é", "^[a-z]+[0-9]$", "(?i)x", ".", "^$"}[rng.IntN(8)]
	}
	if maybe() {
		s["minItems"] = rng.IntN(4)
	}
	if maybe() {
		s["maxItems"] = rng.IntN(6)
	}
	if maybe() {
		s["uniqueItems"] = rng.IntN(3) > 0
	}
	if depth < 2 && maybe() {
		s["items"] = quickSchema(rng, depth+1)
	}
	if depth < 2 && rng.IntN(5) == 0 {
		s["not"] = quickSchema(rng, depth+1)
	}
	if maybe() {
		s["minProperties"] = rng.IntN(3)
	}
	if maybe() {
		s["maxProperties"] = rng.IntN(4)
	}
	if maybe() {
		s["required"] = quickKeys[:rng.IntN(3)]
	}
	if maybe() {
		s["dependentRequired"] = map[string]any{quickKeys[rng.IntN(len(quickKeys))].(string): []any{quickKeys[rng.IntN(len(quickKeys))]}}
	}
	if depth < 2 && maybe() {
		props := map[string]any{}
		for range 1 + rng.IntN(2) {
			props[quickKeys[rng.IntN(len(quickKeys))].(string)] = quickSchema(rng, depth+1)
		}
		s["properties"] = props
	}
	if depth < 2 && rng.IntN(5) == 0 {
		s["propertyNames"] = quickSchema(rng, depth+1)
	}
	subs := func() []any {
		var out []any
		for range 1 + rng.IntN(3) {
			out = append(out, quickSchema(rng, 2))
		}
		return out
	}
	if depth < 1 && rng.IntN(5) == 0 {
		s["prefixItems"] = subs()
	}
	if depth < 1 && rng.IntN(5) == 0 {
		s["contains"] = quickSchema(rng, depth+1)
		if maybe() {
			s["minContains"] = rng.IntN(3)
		}
		if maybe() {
			s["maxContains"] = rng.IntN(4)
		}
	}
	for _, of := range []string{"allOf", "anyOf", "oneOf"} {
		if depth < 1 && rng.IntN(7) == 0 {
			s[of] = subs()
		}
	}
	if rng.IntN(4) == 0 {
		s["description"] = "annotated"
		s["title"] = "t"
	}
	if rng.IntN(8) == 0 { // a keyword quickCheck does not read
		other := []map[string]any{
			{"const": "a"}, {"enum": []any{"a", "b"}}, {"if": map[string]any{"maxLength": 1}, "then": map[string]any{"pattern": "a"}},
			{"format": "email"}, {"additionalItems": false},
			{"unevaluatedItems": false}, {"minimum": 3}, {"additionalProperties": false},
			{"patternProperties": map[string]any{"^a": map[string]any{"maxLength": 1}}}, {"dependentSchemas": map[string]any{"a": map[string]any{"required": []any{"b"}}}}, {"$ref": "#/$defs/x", "$defs": map[string]any{"x": map[string]any{"maxLength": 2}}},
		}
		for k, v := range other[rng.IntN(len(other))] {
			s[k] = v
		}
	}
	if depth == 0 && rng.IntN(10) == 0 {
		s["$schema"] = "http://json-schema.org/draft-07/schema#"
	}
	return s
}

// quickKeys are the property names quickSchema and quickValue use.
var quickKeys = []any{"a", "b", "path", "é", "aaaaaaaaaaaaab"}

// quickValue draws a value of any JSON type, mostly strings, arrays and
// objects.
func quickValue(rng *rand.Rand, depth int) any {
	strs := []string{"", "a", "ab", "abc1", "b", "é", "éé", "x\xffy", "BEGIN RSA PRIVATE KEY", "zz9", "aaaaaaaaaaaaab", "X"}
	if depth < 2 && rng.IntN(4) == 0 {
		o := map[string]any{}
		for range rng.IntN(4) {
			o[quickKeys[rng.IntN(len(quickKeys))].(string)] = quickValue(rng, depth+1)
		}
		return o
	}
	switch n := rng.IntN(10); {
	case n < 4:
		s := strs[rng.IntN(len(strs))]
		if rng.IntN(4) == 0 {
			s = strings.Repeat(s, 1+rng.IntN(40))
		}
		return s
	case n < 8 && depth < 2:
		a := []any{}
		for range rng.IntN(7) {
			a = append(a, quickValue(rng, depth+1))
		}
		if len(a) > 1 && rng.IntN(3) == 0 {
			a = append(a, a[rng.IntN(len(a))])
		}
		return a
	case n == 8:
		return []any{json.Number("1"), true, nil, map[string]any{"k": "v"}, json.Number("1.0")}[rng.IntN(5)]
	default:
		return strs[rng.IntN(len(strs))]
	}
}

// quickAgrees fails t when quickCheck decides v for schema otherwise than
// santhosh; it reports whether quickCheck decided.
func quickAgrees(t *testing.T, schema map[string]any, v any) bool {
	t.Helper()
	s, err := schemarego.Validator(schema)
	if err != nil {
		return false
	}
	q := quickOf(s)
	if q == nil {
		return false
	}
	got, known := q.check(v)
	if !known {
		return false
	}
	if want := s.Validate(v) == nil; got != want {
		sj, _ := json.Marshal(schema)
		t.Fatalf("schema %s, value %#v: quickCheck says valid=%v, santhosh %v", sj, v, got, want)
	}
	return true
}

// TestQuickCheckIsSanthosh: on generated schemas and values, whenever
// quickCheck decides, it says what santhosh says; and it decides often
// enough for the test to mean something, on strings and on arrays, and on
// the long strings and arrays of the reference workloads' rules.
func TestQuickCheckIsSanthosh(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 42))
	decided := map[string]int{}
	for i := 0; i < 1200; i++ {
		schema := quickSchema(rng, 0)
		for range 8 {
			v := quickValue(rng, 0)
			if quickAgrees(t, schema, v) {
				decided[fmt.Sprintf("%T", v)]++
			}
		}
	}
	if decided["string"] < 1500 || decided["[]interface {}"] < 1000 || decided["map[string]interface {}"] < 1000 {
		t.Fatalf("quickCheck decided too few values to test it: %v", decided)
	}
	if testing.Verbose() {
		t.Logf("decided: %v", decided)
	}
	// refused: a keyword it does not read, another draft
	for _, schema := range []map[string]any{
		{"type": "string", "enum": []any{"a"}},
		{"properties": map[string]any{"a": map[string]any{"minimum": 1}}},
		{"additionalProperties": false},
		{"type": "array", "contains": map[string]any{"minimum": 2}},
		{"oneOf": []any{map[string]any{"maxLength": 1}, map[string]any{"if": map[string]any{"maxLength": 1}}}},
		{"$schema": "http://json-schema.org/draft-07/schema#", "maxLength": 3},
		{"maxLength": 3, "not": map[string]any{"const": "a"}},
	} {
		s, err := schemarego.Validator(schema)
		if err != nil {
			t.Fatal(err)
		}
		if quickOf(s) != nil {
			t.Errorf("quickCheck reads %v", schema)
		}
	}
	// the reference workloads' rules on a content, on tags, on the whole
	// arguments
	content := strings.Repeat("alpha beta ", 60)
	tags := []any{"alpha0", "beta1", "gamma2", "delta3", "alpha4", "pi5", "rho6", "mu7"}
	shape := map[string]any{"required": []any{"path"}, "dependentRequired": map[string]any{"content": []any{"path"}},
		"minProperties": 1, "maxProperties": 22, "propertyNames": map[string]any{"maxLength": 64}}
	sane := map[string]any{"type": "array", "prefixItems": []any{map[string]any{"type": "string", "pattern": "^[a-z]"}},
		"contains": map[string]any{"type": "string", "minLength": 2}, "minContains": 1, "maxContains": 59,
		"oneOf": []any{map[string]any{"maxItems": 30}, map[string]any{"minItems": 31}}}
	inWorkspace := map[string]any{"properties": map[string]any{"path": map[string]any{"type": "string", "pattern": "^/(workspace|tmp)/", "maxLength": 4096}}}
	for _, c := range []struct {
		schema map[string]any
		v      any
		want   bool
	}{
		{map[string]any{"type": "string", "maxLength": 16388, "not": map[string]any{"pattern": "BEGIN [A-Z]* ?PRIVATE KEY"}}, content, true},
		{map[string]any{"type": "string", "maxLength": 16388, "not": map[string]any{"pattern": "BEGIN [A-Z]* ?PRIVATE KEY"}}, "-----BEGIN RSA PRIVATE KEY-----\n" + content, false},
		{map[string]any{"type": "array", "maxItems": 23, "uniqueItems": true, "items": map[string]any{"type": "string", "maxLength": 32, "minLength": 1}}, tags, true},
		{map[string]any{"type": "array", "maxItems": 23, "uniqueItems": true, "items": map[string]any{"type": "string", "maxLength": 32, "minLength": 1}}, append(tags, "pi5"), false},
		{shape, map[string]any{"path": "/workspace/a", "content": content, "tags": tags}, true},
		{shape, map[string]any{"content": content, "tags": tags}, false},
		{shape, map[string]any{"path": "/workspace/a", strings.Repeat("k", 65): 1}, false},
		{inWorkspace, map[string]any{"path": "/workspace/a", "content": content, "tags": tags}, true},
		{inWorkspace, map[string]any{"path": "/etc/passwd", "content": content}, false},
		{sane, tags, true},
		{sane, []any{"Alpha0", "beta1"}, false},
		{sane, []any{"alpha0", "b"}, true},
		{sane, []any{"a", "b"}, false},
	} {
		s, err := schemarego.Validator(c.schema)
		if err != nil {
			t.Fatal(err)
		}
		q := quickOf(s)
		if q == nil {
			t.Fatalf("quickCheck does not read %v", c.schema)
		}
		if got, known := q.check(c.v); !known || got != c.want {
			t.Errorf("%v on %v: valid=%v known=%v, want %v", c.schema, c.v, got, known, c.want)
		}
		quickAgrees(t, c.schema, c.v)
	}
}

// FuzzQuickCheck: for fuzzed seeds of generated schemas and values, and a
// fuzzed string as the value, quickCheck agrees with santhosh whenever it
// decides. Run at the end of a change:
// go test -run '^$' -fuzz FuzzQuickCheck -fuzztime 2m -parallel 1 ./internal/engine/
func FuzzQuickCheck(f *testing.F) {
	f.Add(uint64(1), uint64(2), "abc")
	f.Add(uint64(3), uint64(4), "BEGIN RSA PRIVATE KEY")
	f.Add(uint64(5), uint64(6), "é\xff")
	f.Fuzz(func(t *testing.T, a, b uint64, str string) {
		rng := rand.New(rand.NewPCG(a, b))
		schema := quickSchema(rng, 0)
		quickAgrees(t, schema, str)
		quickAgrees(t, schema, []any{str, str + "x"})
		quickAgrees(t, schema, []any{str, quickValue(rng, 1), str})
		quickAgrees(t, schema, quickValue(rng, 0))
		quickAgrees(t, schema, map[string]any{str: str, "a": []any{str}})
	})
}
