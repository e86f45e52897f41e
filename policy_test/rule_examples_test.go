package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

// TestShippedRuleExamplesHold: every config in examples/ loads, and every
// example of every argument rule in it — counted here from the YAML, apart
// from the loader — is decided and holds.
func TestShippedRuleExamplesHold(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example configs: %v", err)
	}
	total := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Pool    struct{ ArgumentRules []rulesExamples } `yaml:"pool"`
			Servers map[string]struct {
				ArgumentRules []rulesExamples `yaml:"argumentRules"`
			} `yaml:"servers"`
		}
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		want := 0
		rules := doc.Pool.ArgumentRules
		for _, s := range doc.Servers {
			rules = append(rules, s.ArgumentRules...)
		}
		for _, r := range rules {
			want += len(r.Examples.Valid) + len(r.Examples.Invalid)
		}
		sum, err := mcpxpolicy.Check(mcpxpolicy.Options{ConfigPaths: []string{f}, Env: []string{}})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if sum.Examples != want {
			t.Errorf("%s: %d rule examples hold, want all %d", f, sum.Examples, want)
		}
		total += want
	}
	if total == 0 {
		t.Error("no rule in examples/ has examples")
	}
}

type rulesExamples struct {
	Examples struct {
		Valid   []any `yaml:"valid"`
		Invalid []any `yaml:"invalid"`
	} `yaml:"examples"`
}
