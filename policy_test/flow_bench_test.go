package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// BenchmarkFlowDecide is the cost of deciding a call under flow rules: a
// call no rule judges or remembers (the common path: a lookup of its
// memoized facts), a call that carries a remembered label (its session is
// made room for and touched), and a call a rule judges (the session's
// labels in the input, the full check order: it leaves the common path),
// against the same call with no flow rules in the config.
func BenchmarkFlowDecide(b *testing.B) {
	for _, bc := range []struct {
		name, config, tool string
		outcome            decision.Outcome
	}{
		{"no-rules", "version: 1\npolicy:\n  write: allow\n", "send_email", decision.Allow},
		{"unlabelled", flowConfig, "lookup", decision.Allow},
		{"remembered", flowConfig, "read_secrets", decision.Allow},
		{"judged", flowConfig, "send_email", decision.Allow},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			conf := filepath.Join(dir, "mcpx-policy.yaml")
			if err := os.WriteFile(conf, []byte(bc.config), 0o644); err != nil {
				b.Fatal(err)
			}
			eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, Env: []string{}, StateDir: filepath.Join(dir, "state")})
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			c := flowCall("web", "bench", "s1", bc.tool)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if d, _ := eng.Decide(context.Background(), c); d.Outcome != bc.outcome {
					b.Fatal(d)
				}
			}
		})
	}
}
