package policy_test

import (
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
)

// TestArrayIndexPointers: a per-argument rule on /items/0/force applies to
// the first element of items (RFC 6901: a token of digits indexes an
// array, and names a key when the value is an object); an absent element
// passes unless the rule is required.
func TestArrayIndexPointers(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, `version: 1
policy:
  write: allow
servers:
  repo:
    argumentRules:
      - id: first-item-not-forced
        tools: [apply]
        argument: /items/0/force
        schema: {const: false}
      - id: second-path-in-workspace
        tools: [apply]
        argument: /items/1/path
        required: true
        schema: {type: string, pattern: "^/workspace/"}
`)
	apply := decision.Tool{Name: "apply", Annotations: &decision.Annotations{ReadOnlyHint: ptr(false), DestructiveHint: ptr(false)}}
	ok := map[string]any{"path": "/workspace/b"}
	cases := []struct {
		name  string
		items any
		paths []string // violation paths, in rule order
	}{
		{"the first element forced", []any{map[string]any{"force": true}, ok}, []string{"/items/0/force"}},
		{"the first element not forced", []any{map[string]any{"force": false}, ok}, nil},
		{"only a later element forced", []any{map[string]any{}, map[string]any{"force": true, "path": "/workspace/b"}}, nil},
		{"an object keyed 0 and 1", map[string]any{"0": map[string]any{"force": true}, "1": ok}, []string{"/items/0/force"}},
		{"the second element outside the workspace", []any{map[string]any{}, map[string]any{"path": "/etc/passwd"}}, []string{"/items/1/path"}},
		{"the required second element absent", []any{map[string]any{"force": false}}, []string{"/items/1/path"}},
	}
	for _, c := range cases {
		d := decide(t, eng, decision.Call{Server: "repo", Tool: apply, Args: map[string]any{"items": c.items}})
		var got []string
		for _, r := range d.Reasons {
			for _, v := range r.Violations {
				got = append(got, v.Path)
			}
		}
		want := decision.Allow
		if len(c.paths) > 0 {
			want = decision.Deny
		}
		if d.Outcome != want || len(got) != len(c.paths) || (len(got) > 0 && got[0] != c.paths[0]) {
			t.Errorf("%s: %s with violations at %v; want %s at %v (%+v)", c.name, d.Outcome, got, want, c.paths, d.Reasons)
		}
	}
}
