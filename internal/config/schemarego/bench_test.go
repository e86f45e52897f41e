package schemarego_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// fourPropertyRule is the rule SPEC §2.2 measures.
const fourPropertyRule = `{
	"type": "object",
	"properties": {
		"path": {"type": "string", "pattern": "^/workspace/", "maxLength": 4096},
		"count": {"type": "integer", "minimum": 1, "maximum": 1000},
		"mode": {"enum": ["read", "write", "append"]},
		"tags": {"type": "array", "maxItems": 30, "items": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"}}
	},
	"required": ["path", "mode"],
	"additionalProperties": false
}`

func fourPropertyArgs(tags int) string {
	ts := make([]string, tags)
	for i := range ts {
		ts[i] = fmt.Sprintf("%q", fmt.Sprintf("tag-%02d-release-candidate", i))
	}
	return fmt.Sprintf(`{"path": "/workspace/projects/mcpx/internal/bundle/schemarego/gen.go", "count": 42, "mode": "write", "tags": [%s]}`,
		strings.Join(ts, ", "))
}

// BenchmarkFourPropertyRule evaluates the generated module, prepared once,
// with a parsed input, against santhosh v6 on the same valid arguments.
func BenchmarkFourPropertyRule(b *testing.B) {
	schema := decodeJSON(b, fourPropertyRule)
	r, err := prepare(schema)
	if err != nil {
		b.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://bench.invalid/s.json", schema); err != nil {
		b.Fatal(err)
	}
	sch, err := c.Compile("https://bench.invalid/s.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, tags := range []int{0, 4, 28} {
		args := fourPropertyArgs(tags)
		in := decodeJSON(b, args)
		v, err := ast.InterfaceToValue(in)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("rego/tags=%d/%dB", tags, len(args)), func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				rs, err := r.pq.Eval(ctx, rego.EvalParsedInput(v))
				if err != nil || len(rs) != 1 {
					b.Fatal(err, rs)
				}
			}
			vs, err := r.eval(v)
			if err != nil || len(vs) != 0 {
				b.Fatalf("want valid, got %v %v", vs, err)
			}
		})
		b.Run(fmt.Sprintf("santhosh/tags=%d/%dB", tags, len(args)), func(b *testing.B) {
			for b.Loop() {
				if err := sch.Validate(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFourPropertyRule pins the verdicts and violations of the benchmark
// rule on valid and invalid arguments.
func TestFourPropertyRule(t *testing.T) {
	r, err := prepare(decodeJSON(t, fourPropertyRule))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(fourPropertyArgs(28)); n < 800 || n > 900 {
		t.Errorf("28-tag arguments are %d bytes, want about 850", n)
	}
	for _, tc := range []struct {
		args string
		want []string // path constraint, in order
	}{
		{fourPropertyArgs(0), nil},
		{fourPropertyArgs(28), nil},
		{`{"path": "/workspace/a", "mode": "read", "count": 1.0}`, nil},
		{`{"path": "/etc/passwd", "mode": "read"}`, []string{"/path pattern"}},
		{`{"path": "/workspace/a", "mode": "delete", "count": 0, "x": null}`, []string{"/count minimum", "/mode enum", "/x additionalProperties"}},
		{`{"path": "/workspace/a", "mode": "read", "count": 2.5, "tags": ["ok", "Bad", 3]}`, []string{"/count type", "/tags/1 pattern", "/tags/2 type"}},
		{`{"mode": "read"}`, []string{" required"}},
		{`[]`, []string{" type"}},
	} {
		vs, err := r.violations(decodeJSON(t, tc.args))
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		var got []string
		for _, v := range vs {
			m := v.(map[string]any)
			got = append(got, fmt.Sprintf("%s %s", m["path"], m["constraint"]))
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(tc.want)
		if string(gj) != string(wj) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: got %s, want %s", tc.args, gj, wj)
		}
	}
}
