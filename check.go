package mcpxpolicy

import (
	"context"
	"fmt"
	"sort"

	"github.com/mcpx/mcpx-policy/internal/engine"
)

// Summary describes a valid config.
type Summary struct {
	Servers int
	Rules   int
	// Examples is how many rule examples hold (every one of them does in
	// a config that loads: a rule that disagrees with one of its examples
	// is a config error).
	Examples int
	Warnings []string
	Revision string
}

// Check loads, validates, compiles and prepares a config without touching
// the ledger: every config error (with file and line) and every Rego error
// of an override surfaces here.
func Check(opts Options) (Summary, error) {
	compiled, err := compileConfig(opts)
	if err != nil {
		return Summary{}, err
	}
	if _, err := engine.Prepare(context.Background(), policyOf(compiled)); err != nil {
		return Summary{}, fmt.Errorf("mcpxpolicy: %w", err)
	}
	cfg, _ := compiled.Data["config"].(map[string]any)
	servers, _ := cfg["servers"].(map[string]any)
	rules, _ := cfg["rules"].(map[string]any)
	s := Summary{Servers: len(servers), Rules: len(rules), Examples: compiled.Examples, Revision: compiled.Revision}
	for _, w := range compiled.Warnings {
		s.Warnings = append(s.Warnings, w.String())
	}
	s.Warnings = append(s.Warnings, catalogWarnings(compiled, opts.Catalog)...)
	sort.Strings(s.Warnings)
	return s, nil
}
