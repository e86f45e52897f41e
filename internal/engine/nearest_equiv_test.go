package engine_test

import (
	"context"
	"sort"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/sweep"
	regofiles "github.com/mcpx/mcpx-policy/rego"
)

// TestNearestIsTheRegos: the did-you-mean suggestion the engine builds in
// Go (exact fractions of integers) is text.nearest's on generated keys and
// candidate lists: near misses, anagrams, ties, exactly half alike, case
// and non-ASCII letters.
func TestNearestIsTheRegos(t *testing.T) {
	opts := []func(*rego.Rego){rego.Query("x := data.mcpx.lib.text.nearest(input.k, input.c)"), rego.SetRegoVersion(ast.RegoV1)}
	for n, src := range regofiles.Modules() {
		opts = append(opts, rego.Module(n, src))
	}
	pq, err := rego.New(opts...).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"path", "pth", "paths", "hatp", "Path", "tags", "tgas", "tag", "a", "ab", "ba", "abc", "cab", "x", "",
		"content", "contnet", "cursor", "limit", "limits", "offset", "ofset", "naïve", "naive", "ÉTÉ", "été", "ab cd", "abcd"}
	const n = 3000
	for i := 0; i < n; i++ {
		if !sweep.Take(i) {
			continue
		}
		r := uint64(i+1) * 0x9e3779b97f4a7c15
		pick := func(k int) int {
			r ^= r >> 29
			r *= 0xbf58476d1ce4e5b9
			return int(r>>33) % k
		}
		key := words[pick(len(words))]
		seen := map[string]bool{}
		var cands []string
		for j := pick(6); j >= 0; j-- {
			c := words[pick(len(words))]
			if !seen[c] {
				seen[c] = true
				cands = append(cands, c)
			}
		}
		sort.Strings(cands)
		cs := make([]any, len(cands))
		for j, c := range cands {
			cs[j] = c
		}
		rs, err := pq.Eval(context.Background(), rego.EvalInput(map[string]any{"k": key, "c": cs}))
		if err != nil || len(rs) != 1 {
			t.Fatalf("%q %q: %v %v", key, cands, rs, err)
		}
		want := rs[0].Bindings["x"]
		if got := engine.Nearest(key, cands); got != want {
			t.Errorf("nearest(%q, %q): Go %q, Rego %v", key, cands, got, want)
		}
	}
	t.Log(sweep.Describe(n))
}
