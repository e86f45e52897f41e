package server_test

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/server"
)

// TestEachAnswerRedactsOnce: a POST /v1/decide — its response, its
// decision log line and its recording (serve --record) — and an AuthZEN
// evaluation redact the call's decision once, whatever the answer: an
// allow, a deny, an ask put on hold, a body that does not read. Not
// parallel: it reads the process's count of redactions.
func TestEachAnswerRedactsOnce(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rec, err := mcpxpolicy.OpenRecorder(mcpxpolicy.RecorderOptions{Dir: filepath.Join(dir, "record")})
	if err != nil {
		t.Fatal(err)
	}
	h := server.New(eng, server.Options{DecisionLog: io.Discard, OnDecision: func(call decision.Call, shown mcpxpolicy.Redacted, _, _ bool) {
		if err := rec.Record(call, shown, eng.Revision(), false, false); err != nil {
			t.Error(err)
		}
	}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	f := &fixture{srv: srv}
	for name, body := range map[string]string{
		"allow": `{"server":"fs","tool":` + writeFile + `,"args":{"path":"/workspace/a","content":"x"}}`,
		"deny":  `{"server":"fs","tool":` + writeFile + `,"args":{"path":"/etc/passwd","content":"ghp_16C7e42F292c6912E7710c838347Ae178B4a"}}`,
		"ask":   `{"server":"git","tool":{"name":"push"},"args":{}}`,
		"bad":   `{"server":`,
	} {
		before := redact.Count()
		status, out := f.do(t, "POST", "/v1/decide", "", body)
		if n := redact.Count() - before; n != 1 {
			t.Errorf("/v1/decide %s: %d redactions; want 1 (status %d: %v)", name, n, status, out)
		}
		if name == "ask" && out["approval"] == nil {
			t.Errorf("the ask was not put on hold: %v", out)
		}
	}
	for name, body := range map[string]string{
		"deny":     `{"subject":{"type":"user","id":"u"},"action":{"name":"tools/call"},"resource":{"type":"mcp_tool","id":"fs/write_file","properties":{"annotations":{"readOnlyHint":false}}},"context":{"arguments":{"path":"/etc/passwd"}}}`,
		"unmapped": `{"subject":{"type":"user","id":"u"},"action":{"name":"tools/list"},"resource":{"type":"mcp_tool","id":"fs/write_file"}}`,
	} {
		before := redact.Count()
		status, out := f.do(t, "POST", server.EvaluationPath, "", body)
		if n := redact.Count() - before; n != 1 {
			t.Errorf("AuthZEN %s: %d redactions; want 1 (status %d: %v)", name, n, status, out)
		}
	}
}
