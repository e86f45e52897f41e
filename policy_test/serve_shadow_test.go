package policy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeShadow: `mcpx-policy serve` over HTTP with fs in shadow mode.
// /v1/decide answers the allow the daemon acts on and carries the policy's
// deny under "shadow"; the decision log marks it; /metrics counts it with
// shadow="true"; AuthZEN answers true with the deny in its context. A
// hidden tool is still refused.
func TestServeShadow(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": shadowConfig})
	logPath := filepath.Join(dir, "decisions.log")
	addr := freeLoopbackAddr(t)
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), "serve", "--config", filepath.Join(dir, "mcpx-policy.yaml"),
		"--state-dir", filepath.Join(dir, "state"), "--addr", addr, "--decision-log", logPath)
	cmd.Env = cleanEnv()
	cmd.Stdout = io.Discard
	srv := startServe(t, cmd, addr)
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(srv.base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		return resp.StatusCode, m
	}
	const tool = `{"name":"write_file","annotations":{"readOnlyHint":false},"inputSchema":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}}`

	status, d := post("/v1/decide", `{"server":"fs","tool":`+tool+`,"args":{"path":"/etc/passwd","content":"x"}}`)
	sh, _ := d["shadow"].(map[string]any)
	rendered, _ := d["rendered"].(map[string]any)
	if status != 200 || d["outcome"] != "allow" || sh["outcome"] != "deny" || sh["step"] != "argument_rules" || rendered["status"] != 200.0 {
		t.Errorf("would-be deny: %d %v; want the allow (rendered 200) with the deny under shadow", status, d)
	}

	status, d = post("/v1/decide", `{"server":"fs","tool":{"name":"delete_file"},"args":{}}`)
	rendered, _ = d["rendered"].(map[string]any)
	body, _ := rendered["body"].(map[string]any)
	if status != 200 || d["outcome"] != "deny" || rendered["status"] != 400.0 || body["code"] != "HiddenTool" {
		t.Errorf("hidden tool: %d %v; want the HiddenTool refusal", status, d)
	}

	status, az := post("/access/v1/evaluation", `{"subject":{"type":"user","id":"alice"},"action":{"name":"tools/call"},
		"resource":{"type":"mcp_tool","id":"fs/write_file","properties":{"annotations":{"readOnlyHint":false}}},"context":{"arguments":{"path":"/etc/passwd"}}}`)
	ctx, _ := az["context"].(map[string]any)
	azShadow, _ := ctx["shadow"].(map[string]any)
	if status != 200 || az["decision"] != true || azShadow["outcome"] != "deny" || azShadow["code"] != "ArgumentRuleViolation" {
		t.Errorf("AuthZEN: %d %v; want true with the deny in context.shadow", status, az)
	}

	resp, err := http.Get(srv.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`mcpx_policy_decisions_total{code="ArgumentRuleViolation",outcome="deny",shadow="true"} 2`,
		`mcpx_policy_decisions_total{code="HiddenTool",outcome="deny",shadow="false"} 1`,
		`mcpx_policy_decisions_total{code="ArgumentRuleViolation",outcome="deny",shadow="false"} 0`,
	} {
		if !bytes.Contains(m, []byte(want+"\n")) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(m), "decisions_total"))
		}
	}

	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	type logEntry struct {
		Input struct {
			Tool struct {
				Name string `json:"name"`
			} `json:"tool"`
		} `json:"input"`
		Result struct {
			Outcome string `json:"outcome"`
			Shadow  *struct {
				Outcome string           `json:"outcome"`
				Reasons []map[string]any `json:"reasons"`
			} `json:"shadow"`
		} `json:"result"`
		Erased []string `json:"erased"`
	}
	var entries []logEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e logEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("decision log line %q: %v", sc.Text(), err)
		}
		entries = append(entries, e)
	}
	if len(entries) != 3 {
		t.Fatalf("the decision log has %d lines, want 3:\n%s", len(entries), b)
	}
	first := entries[0]
	if first.Input.Tool.Name != "write_file" || first.Result.Outcome != "allow" || first.Result.Shadow == nil ||
		first.Result.Shadow.Outcome != "deny" || len(first.Result.Shadow.Reasons) == 0 || first.Result.Shadow.Reasons[0]["code"] != "ArgumentRuleViolation" {
		t.Errorf("the would-be deny's log line: %+v", first)
	}
	if _, logged := first.Result.Shadow.Reasons[0]["message"]; logged || !strings.Contains(strings.Join(first.Erased, " "), "/result/shadow/reasons/*/message") {
		t.Errorf("the shadow reasons' messages are logged (they echo arguments) or not said erased: %s", b)
	}
	if h := entries[1]; h.Result.Outcome != "deny" || h.Result.Shadow == nil || h.Result.Shadow.Outcome != "deny" {
		t.Errorf("the hidden tool's log line: %+v", h)
	}
}
