package mcpxpolicy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// TestEnvIsReadOnlyWhenGiven: an Engine reads the MCPX_POLICY_* layer
// from Options.Env alone. Nil reads no environment — a daemon's own
// variables change none of its policy — and os.Environ() reads the
// process's, as the CLI does. Not parallel: it sets a variable.
func TestEnvIsReadOnlyWhenGiven(t *testing.T) {
	t.Setenv("MCPX_POLICY_POLICY_WRITE", "allow")
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\npolicy:\n  write: deny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	call := decision.Call{Server: "fs", Tool: decision.Tool{Name: "write_file"}, Args: map[string]any{}}
	for _, tc := range []struct {
		env  []string
		want decision.Outcome
	}{
		{nil, decision.Deny},
		{os.Environ(), decision.Allow},
	} {
		eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: tc.env})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := eng.Decide(context.Background(), call)
		eng.Close()
		if d.Outcome != tc.want {
			t.Errorf("Env of %d pairs: %s; want %s", len(tc.env), d.Outcome, tc.want)
		}
		s, err := mcpxpolicy.Check(mcpxpolicy.Options{ConfigPaths: []string{conf}, Env: tc.env})
		if err != nil || (len(s.Warnings) > 0) != (tc.env != nil) {
			t.Errorf("Check with Env of %d pairs: %v, warnings %q; the env layer loosens write only when given", len(tc.env), err, s.Warnings)
		}
	}
}
