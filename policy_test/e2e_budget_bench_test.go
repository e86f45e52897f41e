package policy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// BenchmarkBudgetDecide is the cost of deciding a write to fs, with and
// without a budget (and a loop breaker) counting it, the file store
// holding 100 counted writes: the counts are read from the ledger's
// cached parse and the call leaves the common path.
func BenchmarkBudgetDecide(b *testing.B) {
	for _, bc := range []struct{ name, extra string }{
		{"unbudgeted", ""},
		{"budgeted", "\n    budgets:\n      - {id: fs-writes, max: 1000, window: 1h, per: session}\n    loopBreakers:\n      - {id: fs-loops, max: 1000, window: 1h}\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			conf := filepath.Join(dir, "mcpx-policy.yaml")
			if err := os.WriteFile(conf, []byte("version: 1\npolicy:\n  write: allow\nservers:\n  fs:"+bc.extra+"\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, Env: []string{}, StateDir: filepath.Join(dir, "state")})
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			for i := range 100 {
				d, err := eng.Writes().Begin(fsBudgetCall("s1", fmt.Sprint("/", i)))
				if err != nil {
					b.Fatal(err)
				}
				d.Settle()
			}
			c := fsBudgetCall("s1", "/x")
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if d, _ := eng.Decide(context.Background(), c); d.Outcome != decision.Allow {
					b.Fatal(d)
				}
			}
		})
	}
}
