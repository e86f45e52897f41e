package schemarego_test

import (
	"os"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/bundle/schemarego"
)

func TestDump(t *testing.T) {
	if os.Getenv("SCHEMA") == "" {
		t.Skip()
	}
	s := decodeJSON(t, os.Getenv("SCHEMA"))
	src, err := schemarego.Compile(s, "x")
	t.Log(err)
	os.WriteFile("/tmp/exp/dump.rego", []byte(src), 0o644)
}
