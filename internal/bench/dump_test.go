package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

// TestDumpDecisions writes the whole decision documents of 3,000 M and
// 1,000 L calls (with caller modes and missing annotations mixed in), one
// JSON line each, to $MCPX_DUMP: run it on two commits and compare the
// files to show a change decides every call the same
// (docs/performance.md). Skipped without $MCPX_DUMP.
func TestDumpDecisions(t *testing.T) {
	out := os.Getenv("MCPX_DUMP")
	if out == "" {
		t.Skip("writes its file only when MCPX_DUMP names one")
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	defer w.Flush()
	for _, tc := range []struct {
		s Shape
		n int
	}{{M, 3000}, {L, 1000}} {
		wl := Generate(tc.s)
		dir := t.TempDir()
		opts, err := wl.Options(dir)
		if err != nil {
			t.Fatal(err)
		}
		eng, err := mcpxpolicy.New(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < tc.n; i++ {
			c := wl.Call(i)
			switch {
			case i%3 == 1:
				c.Mode = []string{"ask", "allow", "deny"}[i%9/3]
			case i%19 == 0:
				c.Tool.Annotations = nil
			}
			d, err := eng.Decide(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(d)
			// the config's temporary folder is in every origin
			fmt.Fprintf(w, "%s %d %s\n", tc.s.Name, i, strings.ReplaceAll(string(b), dir, "DIR"))
		}
	}
}
