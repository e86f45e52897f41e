package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/metrics"
	"github.com/mcpx/mcpx-policy/internal/server"
)

const config = `version: 1
policy:
  write: ask
servers:
  fs:
    writePolicy: allow
    hiddenTools: ["move_*"]
    argumentRules:
      - id: fs-writes-in-workspace
        tools: ["write_file"]
        description: writes stay in the workspace
        schema:
          properties:
            path: {type: string, pattern: "^/workspace/"}
`

const writeFile = `{"name":"write_file","annotations":{"readOnlyHint":false},"inputSchema":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}}`

const token = "0123456789abcdef0123456789abcdef"

type fixture struct {
	eng  *mcpxpolicy.Engine
	met  *metrics.Metrics
	srv  *httptest.Server
	log  *bytes.Buffer
	dir  string
	conf string
}

func newFixture(t testing.TB, tok string) *fixture {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	// The metrics are on, as in serve.
	f := &fixture{log: &bytes.Buffer{}, dir: dir, conf: conf}
	f.met = metrics.New(metrics.Options{
		Revision: func() string { return f.eng.Revision() },
		Pending:  func() (map[string]int, error) { return f.eng.Writes().Counts() },
		Approvals: func() (int, error) {
			rs, err := f.eng.Approvals().List()
			n := 0
			for _, r := range rs {
				if r.State == decision.ApprovalPending {
					n++
				}
			}
			return n, err
		},
	})
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}, Observer: f.met})
	if err != nil {
		t.Fatal(err)
	}
	f.eng = eng
	h := server.New(eng, server.Options{Token: tok, DecisionLog: f.log, MaxBody: 4096, Metrics: f.met})
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) do(t testing.TB, method, path, auth, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, raw, err)
	}
	return resp.StatusCode, out
}

func TestDecide(t *testing.T) {
	t.Parallel()
	f := newFixture(t, token)
	cases := []struct {
		name, body     string
		status         int
		outcome, code  string
		renderedStatus float64
	}{
		{"allowed write", `{"server":"fs","tool":` + writeFile + `,"args":{"path":"/workspace/a","content":"hunter2-secret-content"}}`, 200, "allow", "", 200},
		{"rule violation", `{"server":"fs","tool":` + writeFile + `,"args":{"path":"/etc/passwd","content":"x"}}`, 200, "deny", "ArgumentRuleViolation", 400},
		{"hidden", `{"server":"fs","tool":{"name":"move_file"},"args":{}}`, 200, "deny", "HiddenTool", 400},
		{"ask on another server", `{"server":"git","tool":{"name":"push"},"args":{}}`, 200, "ask", "WriteNeedsConfirmation", 428},
		{"not JSON", `{"server":`, 400, "deny", "InvalidInput", 400},
		{"unknown field", `{"server":"fs","tool":"x","args":{},"extra":1}`, 400, "deny", "InvalidInput", 400},
		{"tool name without catalog", `{"server":"fs","tool":"write_file","args":{}}`, 400, "deny", "InvalidInput", 400},
		{"too large", `{"server":"fs","tool":` + writeFile + `,"args":{"content":"` + strings.Repeat("x", 5000) + `"}}`, 413, "deny", "InvalidInput", 400},
	}
	for _, c := range cases {
		status, body := f.do(t, "POST", "/v1/decide", "", c.body)
		if status != c.status || body["outcome"] != c.outcome {
			t.Errorf("%s: status %d outcome %v; want %d %s (%v)", c.name, status, body["outcome"], c.status, c.outcome, body)
			continue
		}
		if c.code != "" {
			if rs, _ := body["reasons"].([]any); len(rs) == 0 || rs[0].(map[string]any)["code"] != c.code {
				t.Errorf("%s: reasons %v; want first code %s", c.name, body["reasons"], c.code)
			}
		}
		if r, _ := body["rendered"].(map[string]any); r == nil || r["status"] != c.renderedStatus {
			t.Errorf("%s: rendered %v; want status %v", c.name, body["rendered"], c.renderedStatus)
		}
	}
	// The decision log has one OPA-shaped line per decision and never the
	// arguments.
	lines := strings.Split(strings.TrimSpace(f.log.String()), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("decision log has %d lines; want %d", len(lines), len(cases))
	}
	if strings.Contains(f.log.String(), "hunter2") || strings.Contains(f.log.String(), "/etc/passwd") {
		t.Errorf("decision log leaks argument values:\n%s", f.log.String())
	}
	var first server.LogEntry
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.Path != "mcpx/decision" || first.DecisionID == "" || len(first.Input.ArgsSHA256) != 64 ||
		first.Result.Outcome != decision.Allow || first.Bundles["mcpx"]["revision"] != f.eng.Revision() {
		t.Errorf("first log line = %+v", first)
	}
	var second server.LogEntry
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if v := second.Result.Reasons; len(v) == 0 || len(v[0].Violations) != 1 || v[0].Violations[0].Path != "/path" || v[0].Violations[0].Rule.ID != "fs-writes-in-workspace" {
		t.Errorf("violation log = %+v", second.Result.Reasons)
	}
}

func TestWritesClearNeedsToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, token)
	call := decision.Call{Server: "fs", Tool: decision.Tool{Name: "write_file"}, Args: map[string]any{"path": "/workspace/a"}}
	d, err := f.eng.Writes().Begin(call)
	if err != nil {
		t.Fatal(err)
	}
	d.Sent()
	if err := d.Unknown("test: connection lost"); err != nil {
		t.Fatal(err)
	}
	status, body := f.do(t, "GET", "/v1/writes", "", "")
	if es, _ := body["entries"].([]any); status != 200 || len(es) != 1 {
		t.Fatalf("GET /v1/writes = %d %v; want one entry", status, body)
	}
	for _, auth := range []string{"", "Bearer wrong-token-wrong-token", "Basic " + token, token} {
		if status, body := f.do(t, "POST", "/v1/writes/clear", auth, `{"server":"fs"}`); status != 401 || body["code"] != "Unauthorized" {
			t.Errorf("clear with %q = %d %v; want 401", auth, status, body)
		}
	}
	if status, _ := f.do(t, "GET", "/v1/writes/clear", "Bearer "+token, ""); status != 405 {
		t.Errorf("GET clear = %d; want 405", status)
	}
	if status, _ := f.do(t, "POST", "/v1/writes/clear", "Bearer "+token, `{"server":"fs","id":"nope"}`); status != 404 {
		t.Errorf("clear unknown id = %d; want 404", status)
	}
	status, body = f.do(t, "POST", "/v1/writes/clear", "Bearer "+token, `{"server":"fs","reason":"checked"}`)
	if cl, _ := body["cleared"].([]any); status != 200 || len(cl) != 1 {
		t.Fatalf("clear = %d %v; want one cleared", status, body)
	}
	if _, body := f.do(t, "GET", "/v1/writes", "", ""); len(body["entries"].([]any)) != 0 {
		t.Errorf("entries after clear = %v", body)
	}
}

func TestClearDisabledWithoutTokenFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	if status, _ := f.do(t, "POST", "/v1/writes/clear", "Bearer ", `{"server":"fs"}`); status != 403 {
		t.Errorf("clear without a configured token = %d; want 403", status)
	}
	status, body := f.do(t, "GET", "/healthz", "", "")
	if status != 200 || body["status"] != "ok" || body["revision"] != f.eng.Revision() {
		t.Errorf("healthz = %d %v", status, body)
	}
	if status, _ := f.do(t, "GET", "/v1/nope", "", ""); status != 404 {
		t.Errorf("unknown path = %d; want 404", status)
	}
	req, _ := http.NewRequest("GET", f.srv.URL+"/healthz", nil)
	req.Host = "rebound.example:8181"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a non-loopback Host on a loopback listener = %d; want 403 (DNS rebinding)", resp.StatusCode)
	}
}

func TestWatchReloadsAndKeepsOldPolicyOnError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, token)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 4)
	hup := make(chan struct{})
	watcher, err := server.NewWatcher([]string{f.conf})
	if err != nil {
		t.Fatal(err)
	}
	go watcher.Run(ctx, f.eng, hup, slog.New(slog.DiscardHandler), done)
	first := f.eng.Revision()
	deny := strings.Replace(config, "writePolicy: allow", "writePolicy: deny", 1)
	replaceFile(t, f.conf, deny)
	if err := wait(t, done); err != nil {
		t.Fatalf("reload after a good change: %v", err)
	}
	second := f.eng.Revision()
	if second == first {
		t.Fatal("revision unchanged after the config changed")
	}
	if _, body := f.do(t, "POST", "/v1/decide", "", `{"server":"fs","tool":`+writeFile+`,"args":{"path":"/workspace/a"}}`); body["outcome"] != "deny" {
		t.Errorf("after reload to writePolicy deny: %v", body["outcome"])
	}
	replaceFile(t, f.conf, "version: 1\npolicy: {write: sometimes}\n")
	if err := wait(t, done); err == nil {
		t.Fatal("reload of a bad config succeeded")
	}
	if f.eng.Revision() != second {
		t.Error("a failed reload changed the policy")
	}
	replaceFile(t, f.conf, config)
	wait(t, done) // the file event, then SIGHUP on top
	hup <- struct{}{}
	if err := wait(t, done); err != nil || f.eng.Revision() != first {
		t.Errorf("SIGHUP reload: %v, revision %s; want %s", err, f.eng.Revision(), first)
	}
}

// replaceFile replaces path the way editors do: write a temp file, rename.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no reload within 10s")
		return nil
	}
}
