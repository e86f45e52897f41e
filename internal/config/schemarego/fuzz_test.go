package schemarego_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// byteSource turns fuzz bytes into choices; when the bytes run out every
// choice is 0, so every input is a complete schema and instance.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) next(n int) int {
	if s.i >= len(s.b) || n <= 1 {
		s.i++
		return 0
	}
	c := int(s.b[s.i]) % n
	s.i++
	return c
}

func pick[T any](s *byteSource, xs []T) T { return xs[s.next(len(xs))] }

var (
	fzNumbers = []string{"0", "1", "-1", "1.0", "2", "2.5", "3", "0.1", "0.3", "-0.5", "7", "10", "1e2", "1e308", "1e400",
		"-0", "0.0", "12345678901234567890", "1.5e-3", "100.00", "0.75", "4.0e0", "9007199254740993", "1.0000000000000000001"}
	fzStrings = []string{"", "a", "ab", "abc", "b", "é", "🎉x", "/workspace/a", "a/b", "~x", "--force", "main", "A", "12", "a\u0000b", "x y",
		"/workspace/../x", "/workspace-evil/a", "/workspace", "https://good.com/a", "https://good.com@evil.com", "HTTPS://x.good.com:443"}
	fzKeys    = []string{"a", "b", "c", "a/b", "~0", "", "foo", "é"}
	fzPattern = []string{"^a", "b$", "^[a-z]+$", ".", "é", "^$", "a|b", `\d`, "^/workspace/", "~", "[0-9]{2}", "^.{2,}$"}
	fzMult    = []string{"0.5", "0.1", "3", "1e-2", "0.0001", "2", "1.5", "1e2", "0.3", "7"}
	fzTypes   = []string{"null", "boolean", "number", "integer", "string", "array", "object"}
)

func fzNum(s *byteSource) json.Number { return json.Number(pick(s, fzNumbers)) }

func fzValue(s *byteSource, depth int) any {
	k := s.next(8)
	if depth <= 0 && k >= 6 {
		k = k % 6
	}
	switch k {
	case 0:
		return fzNum(s)
	case 1:
		return pick(s, fzStrings)
	case 2:
		return nil
	case 3:
		return s.next(2) == 1
	case 4:
		return fzNum(s)
	case 5:
		return pick(s, fzStrings)
	case 6:
		n := s.next(4)
		a := make([]any, n)
		for i := range a {
			a[i] = fzValue(s, depth-1)
		}
		return a
	default:
		n := s.next(4)
		o := map[string]any{}
		for i := 0; i < n; i++ {
			o[pick(s, fzKeys)] = fzValue(s, depth-1)
		}
		return o
	}
}

func fzSchema(s *byteSource, depth int) any {
	k := s.next(16)
	if k == 0 {
		return true
	}
	if k == 1 {
		return false
	}
	o := map[string]any{}
	n := 1 + s.next(3)
	for i := 0; i < n; i++ {
		fzKeyword(s, o, depth)
	}
	return o
}

func fzSchemas(s *byteSource, depth int) []any {
	n := 1 + s.next(3)
	a := make([]any, n)
	for i := range a {
		a[i] = fzSchema(s, depth-1)
	}
	return a
}

func fzKeyword(s *byteSource, o map[string]any, depth int) {
	kw := s.next(39)
	if depth <= 0 && kw >= 20 {
		kw = kw % 20
	}
	switch kw {
	case 0:
		if s.next(3) == 0 {
			o["type"] = []any{pick(s, fzTypes), pick(s, fzTypes)}
		} else {
			o["type"] = pick(s, fzTypes)
		}
	case 1:
		o["enum"] = []any{fzValue(s, 2), fzValue(s, 2)}
	case 2:
		o["const"] = fzValue(s, 2)
	case 3:
		o["minimum"] = fzNum(s)
	case 4:
		o["maximum"] = fzNum(s)
	case 5:
		o["exclusiveMinimum"] = fzNum(s)
	case 6:
		o["exclusiveMaximum"] = fzNum(s)
	case 7:
		o["multipleOf"] = json.Number(pick(s, fzMult))
	case 8:
		o["minLength"] = json.Number(pick(s, []string{"0", "1", "2", "3"}))
	case 9:
		o["maxLength"] = json.Number(pick(s, []string{"0", "1", "2", "3"}))
	case 10:
		o["pattern"] = pick(s, fzPattern)
	case 11:
		o["minItems"] = json.Number(pick(s, []string{"0", "1", "2"}))
	case 12:
		o["maxItems"] = json.Number(pick(s, []string{"0", "1", "2"}))
	case 13:
		o["uniqueItems"] = s.next(3) != 0
	case 14:
		o["required"] = []any{pick(s, fzKeys)}
	case 15:
		o["minProperties"] = json.Number(pick(s, []string{"0", "1", "2"}))
	case 16:
		o["maxProperties"] = json.Number(pick(s, []string{"0", "1", "2"}))
	case 17:
		o["dependentRequired"] = map[string]any{pick(s, fzKeys): []any{pick(s, fzKeys)}}
	case 18:
		o["$ref"] = "#/$defs/" + pick(s, []string{"d0", "d1"})
	case 19:
		o["format"] = pick(s, []string{"email", "date", "uri"})
	case 20:
		o["items"] = fzSchema(s, depth-1)
	case 21:
		o["prefixItems"] = fzSchemas(s, depth)
	case 22:
		o["contains"] = fzSchema(s, depth-1)
		if s.next(2) == 1 {
			o["minContains"] = json.Number(pick(s, []string{"0", "1", "2"}))
		}
		if s.next(2) == 1 {
			o["maxContains"] = json.Number(pick(s, []string{"0", "1", "2"}))
		}
	case 23:
		o["properties"] = map[string]any{pick(s, fzKeys): fzSchema(s, depth-1), pick(s, fzKeys): fzSchema(s, depth-1)}
	case 24:
		o["patternProperties"] = map[string]any{pick(s, fzPattern): fzSchema(s, depth-1)}
	case 25:
		if s.next(2) == 0 {
			o["additionalProperties"] = s.next(2) == 1
		} else {
			o["additionalProperties"] = fzSchema(s, depth-1)
		}
	case 26:
		o["propertyNames"] = fzSchema(s, depth-1)
	case 27:
		o["dependentSchemas"] = map[string]any{pick(s, fzKeys): fzSchema(s, depth-1)}
	case 28:
		o["allOf"] = fzSchemas(s, depth)
	case 29:
		o["anyOf"] = fzSchemas(s, depth)
	case 30:
		o["oneOf"] = fzSchemas(s, depth)
	case 31:
		o["not"] = fzSchema(s, depth-1)
	case 32:
		o["if"] = fzSchema(s, depth-1)
		if s.next(3) != 0 {
			o["then"] = fzSchema(s, depth-1)
		}
		if s.next(3) != 0 {
			o["else"] = fzSchema(s, depth-1)
		}
	case 33:
		if s.next(2) == 0 {
			o["unevaluatedProperties"] = s.next(2) == 1
		} else {
			o["unevaluatedProperties"] = fzSchema(s, depth-1)
		}
	case 34:
		if s.next(2) == 0 {
			o["unevaluatedItems"] = s.next(2) == 1
		} else {
			o["unevaluatedItems"] = fzSchema(s, depth-1)
		}
	case 35:
		o["allOf"] = []any{map[string]any{"properties": map[string]any{pick(s, fzKeys): fzSchema(s, depth-1)}}}
		o["unevaluatedProperties"] = fzSchema(s, depth-1)
	case 37:
		o["pathWithin"] = []any{pick(s, []string{"/workspace", "/", "/a/b"}), "/tmp"}
	case 38:
		o["urlWithin"] = map[string]any{"hosts": []any{pick(s, []string{"good.com", "*.good.com", "10.0.0.1"})}}
	default:
		o["items"] = fzSchema(s, depth-1)
		o["maxItems"] = json.Number("3")
	}
}

// fuzzCase builds a schema (with $defs d0, d1 at its root) and four
// instances from data.
func fuzzCase(data []byte) (map[string]any, []any) {
	s := &byteSource{b: data}
	root, ok := fzSchema(s, 3).(map[string]any)
	if !ok {
		root = map[string]any{"allOf": []any{root}}
	}
	root["$defs"] = map[string]any{"d0": fzSchema(s, 2), "d1": fzSchema(s, 2)}
	instances := make([]any, 4)
	for i := range instances {
		instances[i] = fzValue(s, 3)
	}
	return root, instances
}

func santhoshValid(t *testing.T, schema any, instance any) bool {
	t.Helper()
	// santhosh as Validator sets it up: draft 2020-12, nothing fetched,
	// and the pathWithin/urlWithin vocabulary (the Go form of those
	// keywords, internal/confine)
	sch, err := schemarego.Validator(schema)
	if err != nil {
		t.Fatalf("santhosh refuses a schema schemarego accepted: %v", err)
	}
	return sch.Validate(instance) == nil
}

// FuzzAgainstSanthosh generates a schema and instances from the fuzz input
// and requires the generated Rego to give santhosh v6's verdict on each.
// Schemas schemarego refuses are skipped (they are load errors, never
// evaluated).
func FuzzAgainstSanthosh(f *testing.F) {
	for _, seed := range [][]byte{
		{}, {2, 0, 5}, {3, 7, 3, 1, 2}, {4, 23, 1, 0, 3, 2, 9, 4},
		{5, 29, 2, 3, 0, 7, 1, 3, 8, 2}, {6, 30, 2, 4, 10, 5, 14, 3},
		[]byte("multipleOf and big numbers"), []byte("\x02\x07\x03\x00\x00\x00\x04\x0d"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		schema, instances := fuzzCase(data)
		r, err := prepare(schema)
		if err != nil {
			var se *schemarego.Error
			if !errors.As(err, &se) || strings.HasPrefix(se.Msg, "internal error") {
				sj, _ := json.Marshal(schema)
				t.Fatalf("schema %s: %v", sj, err)
			}
			return
		}
		for _, in := range instances {
			vs, err := r.violations(in)
			sj, _ := json.Marshal(schema)
			ij, _ := json.Marshal(in)
			if err != nil {
				t.Fatalf("schema %s instance %s: evaluation error %v", sj, ij, err)
			}
			want := santhoshValid(t, schema, in)
			if (len(vs) == 0) != want {
				t.Fatalf("disagreement: schema %s instance %s: santhosh valid=%v, rego violations %v\n%s", sj, ij, want, vs, r.src)
			}
		}
	})
}

// TestDifferentialSample runs the fuzz comparison on a fixed pseudo-random
// sample, so plain `go test` covers it, and checks that the generator makes
// mostly accepted schemas and both verdicts.
func TestDifferentialSample(t *testing.T) {
	seed := uint64(0x9e3779b97f4a7c15)
	var accepted, valid, invalid int
	const n = 300
	for i := 0; i < n; i++ {
		data := make([]byte, 64)
		for j := range data {
			seed ^= seed << 13
			seed ^= seed >> 7
			seed ^= seed << 17
			data[j] = byte(seed)
		}
		schema, instances := fuzzCase(data)
		r, err := prepare(schema)
		if err != nil {
			continue
		}
		accepted++
		for _, in := range instances {
			vs, err := r.violations(in)
			if err != nil {
				t.Fatalf("evaluation error: %v", err)
			}
			want := santhoshValid(t, schema, in)
			if (len(vs) == 0) != want {
				sj, _ := json.Marshal(schema)
				ij, _ := json.Marshal(in)
				t.Fatalf("disagreement: schema %s instance %s: santhosh valid=%v, rego %v", sj, ij, want, vs)
			}
			if want {
				valid++
			} else {
				invalid++
			}
		}
	}
	t.Logf("%d/%d schemas accepted; %d valid and %d invalid instances agree", accepted, n, valid, invalid)
	if accepted < n/2 || valid < n/10 || invalid < n/10 {
		t.Errorf("generator is lopsided: %d accepted, %d valid, %d invalid", accepted, valid, invalid)
	}
}

// TestFuzzRegressions keeps, readable, what FuzzAgainstSanthosh found
// (the raw inputs are in testdata/fuzz/FuzzAgainstSanthosh) or a
// differential run found: each was a valid schema refused with an internal
// error or failing at evaluation, none a wrong verdict.
func TestFuzzRegressions(t *testing.T) {
	for _, tc := range []struct{ why, schema string }{
		{"OPA's type checker refused a body whose conditions narrow v to string and to number",
			`{"const": 1, "enum": ["", ""], "required": ["a"]}`},
		{"an always-false item predicate left the every variable unused",
			`{"items": {"not": true}}`},
		{"OPA's printer rewrote a rule body 'true', so the printed module differed from the AST",
			`{"anyOf": [{"not": {"allOf": [false]}}]}`},
		{"const as v == c in a comprehension body after a type test: OPA's comprehension indexing evaluated the test with v unbound",
			`{"not": {"const": true, "maximum": -0.5}}`},
		{"the same in a oneOf branch",
			`{"oneOf": [{"type": "string", "const": "a"}, {"const": 1, "minimum": 0}]}`},
		{"a copied predicate that does not read its value (oneOf: [true]) left the every variable unused",
			`{"additionalProperties": {"oneOf": [true]}, "items": {"oneOf": [true, {"const": 1}]}}`},
		{"not of a subschema whose predicate always holds for the types it applies to gave a comprehension an empty body",
			`{"not": {"dependentSchemas": {"a": {"maxItems": 2}}}}`},
		{"a member read after const narrowed the value's type, with no type test before",
			`{"dependentSchemas": {"foo": {"const": "x", "required": ["b"]}}}`},
		{"contains whose predicate always holds for the types it applies to gave a comprehension an empty body",
			`{"contains": {"dependentSchemas": {"a": {"minItems": 0}}}}`},
		{"a type test in an every body does not reach a comprehension nested in it, where a oneOf narrowed the key",
			`{"propertyNames": {"oneOf": [{"const": {"a": 1}, "oneOf": [{"const": 9}, {"maxItems": 2}]}, true]}}`},
	} {
		schema := decodeJSON(t, tc.schema)
		r, err := prepare(schema)
		if err != nil {
			t.Fatalf("%s: %s: %v", tc.why, tc.schema, err)
		}
		for _, in := range []string{`1`, `""`, `"a"`, `[]`, `[1]`, `{}`, `{"a": 1}`, `null`} {
			v := decodeJSON(t, in)
			vs, err := r.violations(v)
			if err != nil {
				t.Fatalf("%s on %s: %v", tc.schema, in, err)
			}
			if want := santhoshValid(t, schema, v); (len(vs) == 0) != want {
				t.Errorf("%s on %s: santhosh valid=%v, got %v", tc.schema, in, want, vs)
			}
		}
	}
}
