package decision

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/mcpx/mcpx-policy/internal/jsonsuite"
)

// reference is the path Canonical always had: Go's encoder, then
// jcs.Transform.
func reference(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(raw)
}

func agree(t *testing.T, v any) {
	t.Helper()
	want, werr := reference(v)
	got, gerr := Canonical(v)
	if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
		t.Errorf("Canonical(%#v) = %q, %v; reference %q, %v", v, got, gerr, want, werr)
	}
}

var edgeValues = []any{
	nil, true, false, "", "plain", "quote\" back\\ slash/", "\b\f\n\r\t\x00\x01\x1f\x7f",
	"<&> \u2028\u2029 é 😀 \ufffd", "bad \xff\xfe utf8 \xe2\x82", "\xed\xa0\x80",
	0.0, math.Copysign(0, -1), 1.0, -1.5, 1e21, 1e-7, 123456789012345680000.0, 5e-324, math.MaxFloat64,
	math.NaN(), math.Inf(1), 1, -7, int64(1) << 60, int64(-1) << 62, int8(3), uint(4),
	json.Number("1"), json.Number("1.0"), json.Number("-0"), json.Number("1e400"), json.Number("1E+2"),
	json.Number("0.1"), json.Number("12345678901234567890"), json.Number(""), json.Number("01"),
	json.Number(" 1"), json.Number("1 "), json.Number("true"), json.Number("\"1\""), json.Number("-"),
	[]any{}, []any{nil, 1.5, "x", []any{map[string]any{}}},
	map[string]any{}, map[string]any{"b": 1, "a": 2, "A": 3, "aa": 4, "é": 5, "😀": 6, "\ufb33": 7, "": 8},
	map[string]any{"\xff": 1, "\xfe": 2}, map[string]any{"x": math.NaN()}, map[string]any{"x": struct{ A int }{1}},
	struct{ B, A int }{1, 2}, []int{3, 1},
}

func TestCanonicalMatchesReference(t *testing.T) {
	for _, v := range edgeValues {
		agree(t, v)
	}
	// every JSON value of the official JSON Schema test suite, decoded
	// both with and without UseNumber
	n := 0
	for _, f := range jsonsuite.Files(t) {
		raw := f.Raw
		var plain any
		if err := json.Unmarshal(raw, &plain); err != nil {
			t.Fatal(err)
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var numbers any
		if err := d.Decode(&numbers); err != nil {
			t.Fatal(err)
		}
		agree(t, plain)
		agree(t, numbers)
		n++
	}
	t.Logf("%d suite files agree", n)
}

func FuzzCanonicalMatchesReference(f *testing.F) {
	f.Add(`{"a":[1,2.5,"x\u0000"],"b":{"c":null}}`)
	f.Add(`[1e400, "\ud800", 0.000001]`)
	f.Fuzz(func(t *testing.T, doc string) {
		d := json.NewDecoder(strings.NewReader(doc))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return
		}
		agree(t, v)
		var p any
		if json.Unmarshal([]byte(doc), &p) == nil {
			agree(t, p)
		}
	})
}

// BenchmarkCanonical compares the direct writer with the reference path on
// a call of ~1 KB of arguments.
func BenchmarkCanonical(b *testing.B) {
	args := map[string]any{"path": "/workspace/project2/src/file_1.go", "content": strings.Repeat("epsilon xi iota phi ", 30),
		"count": json.Number("707"), "ratio": 24.08, "tags": []any{"delta0", "xi1", "sigma2"},
		"options": map[string]any{"depth": json.Number("2"), "encoding": "utf-8", "force": false}, "meta": map[string]any{"attempt": 1.0}}
	call := map[string]any{"server": "srv018", "tool": "write_03", "arguments": args}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := Canonical(call); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := reference(call); err != nil {
				b.Fatal(err)
			}
		}
	})
}
