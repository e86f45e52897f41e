package schemarego_test

import (
	"sync"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// TestCompileConcurrently: Compile shares only read-only state (the
// checked helpers, the capabilities) between calls, and gives the same
// module on every goroutine (run with -race).
func TestCompileConcurrently(t *testing.T) {
	t.Parallel()
	var schemas []any
	for _, s := range append([]string{fourPropertyRule}, workloadRules...) {
		schemas = append(schemas, decodeJSON(t, s))
	}
	want := make([]string, len(schemas))
	for i, s := range schemas {
		src, err := schemarego.Compile(s, "s_x")
		if err != nil {
			t.Fatal(err)
		}
		want[i] = src
	}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, s := range schemas {
				src, err := schemarego.Compile(s, "s_x")
				if err != nil || src != want[i] {
					t.Errorf("schema %d: %v, or a different module", i, err)
				}
			}
		}()
	}
	wg.Wait()
}
