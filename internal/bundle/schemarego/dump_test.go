package schemarego_test

import (
	"os"
	"testing"
)

func TestDump(t *testing.T) {
	r, err := prepare(decodeJSON(t, os.Getenv("SCHEMA")))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile("/tmp/exp/dump.rego", []byte(r.src), 0o644)
}
