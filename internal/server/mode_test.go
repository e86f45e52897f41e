package server_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"net/http/httptest"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/server"
)

// TestDecideModeOnlyTightens: the HTTP caller is trusted to decide calls,
// not to loosen them. A body's "mode" tightens the configured write mode
// and never loosens it: "mode": "allow" under writePolicy: deny is a deny.
func TestDecideModeOnlyTightens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	cfg := "version: 1\npolicy:\n  write: ask\nservers:\n  fs:\n    writePolicy: deny\n  open:\n    writePolicy: allow\n"
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{eng: eng, dir: dir, conf: conf}
	f.srv = httptest.NewServer(server.New(eng, server.Options{}))
	t.Cleanup(f.srv.Close)
	cases := []struct {
		server, mode, outcome, code string
	}{
		{"fs", "allow", "deny", "WriteDenied"},
		{"fs", "ask", "deny", "WriteDenied"},
		{"fs", "", "deny", "WriteDenied"},
		{"git", "allow", "ask", "WriteNeedsConfirmation"}, // policy.write: ask
		{"open", "allow", "allow", ""},
		{"open", "ask", "ask", "WriteNeedsConfirmation"},
		{"open", "deny", "deny", "WriteDenied"},
	}
	for _, c := range cases {
		body := `{"server":"` + c.server + `","tool":` + writeFile + `,"args":{"path":"/workspace/a"}`
		if c.mode != "" {
			body += `,"mode":"` + c.mode + `"`
		}
		status, got := f.do(t, "POST", "/v1/decide", "", body+"}")
		if status != 200 || got["outcome"] != c.outcome {
			t.Errorf("%s with mode %q: status %d outcome %v; want %s", c.server, c.mode, status, got["outcome"], c.outcome)
			continue
		}
		if c.code != "" {
			if rs, _ := got["reasons"].([]any); len(rs) == 0 || rs[0].(map[string]any)["code"] != c.code {
				t.Errorf("%s with mode %q: reasons %v; want %s", c.server, c.mode, got["reasons"], c.code)
			}
		}
	}
}
