package schemarego_test

import (
	"os"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// TestMain runs the tests with the collector at a quarter of Go's
// default pace (sweep.LessGC): they compile and evaluate thousands of
// schemas.
func TestMain(m *testing.M) {
	sweep.LessGC()
	os.Exit(m.Run())
}
