package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// BenchmarkLoadRuleExamples measures what rule examples add to a load: 100
// rules with distinct schemas, without examples and with four each (every
// load decides them all, a hot reload too).
//
//	go test -run '^$' -bench BenchmarkLoadRuleExamples -benchtime 5x ./internal/config/
func BenchmarkLoadRuleExamples(b *testing.B) {
	for _, examples := range []bool{false, true} {
		b.Run(fmt.Sprintf("examples=%v", examples), func(b *testing.B) {
			var cfg strings.Builder
			cfg.WriteString("version: 1\npool:\n  argumentRules:\n")
			for i := 0; i < 100; i++ {
				fmt.Fprintf(&cfg, "    - id: r%d\n      tools: [t%d]\n      argument: n\n      schema: {type: integer, minimum: 1, maximum: %d}\n", i, i, 100+i)
				if examples {
					fmt.Fprintf(&cfg, "      examples: {valid: [1, %d], invalid: [0, %d]}\n", 100+i, 101+i)
				}
			}
			path := filepath.Join(b.TempDir(), "main.yaml")
			if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			opts := config.LoadOptions{Paths: []string{path}, Env: []string{}, SchemaCompiler: schemarego.Compile, RuleEvaluator: schemarego.Evaluate}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c, err := config.Load(opts)
				if err != nil {
					b.Fatal(err)
				}
				if examples && c.Examples != 400 {
					b.Fatalf("%d examples hold, want 400", c.Examples)
				}
			}
		})
	}
}
