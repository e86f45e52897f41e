package policy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
		for _, w := range sum.Warnings {
			if strings.Contains(w, "hand-written path prefix") {
				t.Errorf("%s: %s", f, w)
			}
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

// TestDocumentedRuleExamplesHold: the rules docs/argument-rules.md shows
// (each ```yaml block that is a list of rules) load as one config, and
// every example they carry holds.
func TestDocumentedRuleExamplesHold(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "argument-rules.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg strings.Builder
	cfg.WriteString("version: 1\npool:\n  argumentRules:\n")
	want, blocks := 0, 0
	for _, block := range strings.Split(string(raw), "```yaml\n")[1:] {
		body, _, _ := strings.Cut(block, "```")
		if !strings.HasPrefix(body, "- id: ") {
			continue
		}
		blocks++
		var rules []rulesExamples
		if err := yaml.Unmarshal([]byte(body), &rules); err != nil {
			t.Fatalf("block %d: %v\n%s", blocks, err, body)
		}
		for _, r := range rules {
			want += len(r.Examples.Valid) + len(r.Examples.Invalid)
		}
		// ids are unique per config: the blocks reuse some
		body = regexp.MustCompile(`(?m)^- id: (\S+)`).ReplaceAllString(body, fmt.Sprintf("- id: $1-%d", blocks))
		for _, line := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
			cfg.WriteString("    " + line + "\n")
		}
	}
	dir := writeFiles(t, map[string]string{"rules.yaml": cfg.String()})
	sum, err := mcpxpolicy.Check(mcpxpolicy.Options{ConfigPaths: []string{filepath.Join(dir, "rules.yaml")}, Env: []string{}})
	if err != nil {
		t.Fatalf("the documented rules do not load: %v\n%s", err, cfg.String())
	}
	if blocks < 5 || want == 0 || sum.Examples != want {
		t.Errorf("%d blocks of rules, %d examples hold; want all %d", blocks, sum.Examples, want)
	}
	// the documented rules are the ones to copy: none is a hand-written
	// path prefix that check warns about
	for _, w := range sum.Warnings {
		t.Errorf("the documented rules load with a warning: %s", w)
	}
}
