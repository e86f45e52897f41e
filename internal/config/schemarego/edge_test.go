package schemarego_test

import (
	"testing"
	"time"
)

// TestHugeNumbers: numbers far beyond float64 neither fail nor hang the
// generated code.
func TestHugeNumbers(t *testing.T) {
	for _, tc := range []struct {
		schema, instance string
		valid            bool
	}{
		{`{"type": "integer"}`, `1e4000`, true},
		{`{"type": "integer"}`, `1.5e-4000`, false},
		{`{"type": "integer"}`, `123456789012345678901234567890.000`, true},
		{`{"minimum": 1}`, `1e4000`, true},
		{`{"maximum": 1}`, `1e4000`, false},
		{`{"minimum": 0}`, `-1e4000`, false},
		{`{"exclusiveMinimum": 0}`, `1e-4000`, true},
		{`{"multipleOf": 0.5}`, `1e4000`, true},
		{`{"multipleOf": 3}`, `1e4000`, false},
		{`{"multipleOf": 0.5}`, `1e-4000`, false},
		{`{"multipleOf": 0.01}`, `0.07`, true},
		{`{"multipleOf": 0.01}`, `-0.075`, false},
		{`{"multipleOf": 0.0001}`, `0.00751`, false},
		{`{"multipleOf": 0.0001}`, `75e-4`, true},
		{`{"multipleOf": 1e-400}`, `1e-399`, true},
		{`{"multipleOf": 7}`, `700000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000007`, true},
		{`{"const": 1}`, `1e0`, true},
		{`{"enum": [[1, {"a": 2}]]}`, `[1.0, {"a": 2e0}]`, true},
		{`{"uniqueItems": true}`, `[1e400, 10e399]`, false},
		{`{"uniqueItems": true}`, `[{"a": 1}, {"a": 1.0}]`, false},
		{`{"uniqueItems": true}`, `[0, false, null, "", [], {}]`, true},
		{`{"required": ["a", "b"]}`, `{"a": false, "b": null}`, true},
		{`{"minLength": 2}`, `"😀"`, false},
		{`{"maxLength": 1}`, `"😀"`, true},
	} {
		r, err := prepare(decodeJSON(t, tc.schema))
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		start := time.Now()
		vs, err := r.violations(decodeJSON(t, tc.instance))
		if err != nil {
			t.Fatalf("%s on %s: %v", tc.schema, tc.instance, err)
		}
		if (len(vs) == 0) != tc.valid {
			t.Errorf("%s on %s: want valid=%v, got %v", tc.schema, tc.instance, tc.valid, vs)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s on %s took %v", tc.schema, tc.instance, d)
		}
	}
}
