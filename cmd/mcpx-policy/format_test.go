package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestFormatFlag: the six commands with --format refuse any value but
// text and json in the same words, as a usage error.
func TestFormatFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"eval", "--config", "c.yaml", "--format", "yaml", "call.json"}, 1},
		{[]string{"diff", "--old", "a.yaml", "--new", "b.yaml", "--format", "yaml"}, 1},
		{[]string{"replay", "--config", "c.yaml", "--format", "yaml", "record"}, 1},
		{[]string{"pins", "--state-dir", dir, "--format", "yaml"}, 1},
		{[]string{"writes", "--state-dir", dir, "--format", "yaml"}, 1},
		{[]string{"approvals", "--state-dir", dir, "--format", "yaml"}, 1},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			first, _, _ := strings.Cut(errb.String(), "\n")
			if want := `mcpx-policy: error: unknown --format "yaml" (want text or json)`; code != tc.code || first != want {
				t.Errorf("%s: exit %d, stderr\n%s\nwant exit %d and first %q", strings.Join(tc.args, " "), code, errb.String(), tc.code, want)
			}
			if out.Len() != 0 {
				t.Errorf("stdout %q; want nothing", out.String())
			}
		})
	}
}
