package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// Asks over HTTP, end to end: the built binary serves, the test is the
// daemon that asks, the person who approves (over HTTP with the token, or
// with `mcpx-policy approve`), and another process sharing the state dir.

const approvalToken = "approvals-test-token-0123456789"

type serveFixture struct {
	base, dir, state, config string
	stderr                   *syncBuffer
}

// startAskServe runs `mcpx-policy serve` with a token on askConfig.
func startAskServe(t *testing.T) *serveFixture {
	t.Helper()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": askConfig, "token": approvalToken + "\n"})
	f := &serveFixture{dir: dir, state: filepath.Join(dir, "state"), config: filepath.Join(dir, "mcpx-policy.yaml")}
	addr := freeLoopbackAddr(t)
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), "serve", "--config", f.config, "--state-dir", f.state,
		"--addr", addr, "--token-file", filepath.Join(dir, "token"), "--decision-log", "off")
	cmd.Env = cleanEnv()
	cmd.Stdout = io.Discard
	srv := startServe(t, cmd, addr)
	f.base, f.stderr = srv.base, srv.stderr
	return f
}

// do sends a request and decodes the JSON answer.
func (f *serveFixture) do(t *testing.T, method, path, auth string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, out
}

// callDoc is the call document of askCall(path), optionally with an
// approval id.
func callDoc(path, approval string) map[string]any {
	doc := map[string]any{"server": "fs", "tool": writeFile, "args": map[string]any{"path": path, "content": "hello"}}
	if approval != "" {
		doc["approval"] = approval
	}
	return doc
}

// decideHTTP posts a call document and returns the outcome, the rendered
// daemon status, the first reason's code and the whole answer.
func (f *serveFixture) decideHTTP(t *testing.T, doc map[string]any) (string, int, string, map[string]any) {
	t.Helper()
	status, out := f.do(t, http.MethodPost, "/v1/decide", "", doc)
	if status != http.StatusOK {
		t.Fatalf("/v1/decide: %d %v", status, out)
	}
	rendered, _ := out["rendered"].(map[string]any)
	st, _ := rendered["status"].(float64)
	code := ""
	if rs, _ := out["reasons"].([]any); len(rs) > 0 {
		code, _ = rs[0].(map[string]any)["code"].(string)
	}
	return out["outcome"].(string), int(st), code, out
}

// askHTTP decides an ask over HTTP and returns its approval request.
func (f *serveFixture) askHTTP(t *testing.T, path string) (id, sum string) {
	t.Helper()
	outcome, status, _, out := f.decideHTTP(t, callDoc(path, ""))
	if outcome != "ask" || status != http.StatusPreconditionRequired {
		t.Fatalf("decide = %s, rendered %d; want an ask rendered as 428", outcome, status)
	}
	approval, ok := out["approval"].(map[string]any)
	if !ok {
		t.Fatalf("the ask carries no approval request: %v", out)
	}
	body := out["rendered"].(map[string]any)["body"].(map[string]any)
	inBody, _ := body["approval"].(map[string]any)
	if inBody["id"] != approval["id"] || inBody["sha256"] != approval["sha256"] || inBody["expires"] != approval["expires"] {
		t.Fatalf("the 428 body's approval %v is not the request %v", inBody, approval)
	}
	prompt := approval["prompt"].(map[string]any)
	if prompt["sha256"] != approval["sha256"] || prompt["server"] != "fs" || prompt["tool"] != "write_file" {
		t.Fatalf("the request's prompt is not the call's: %v", prompt)
	}
	return approval["id"].(string), approval["sha256"].(string)
}

func (f *serveFixture) approveHTTP(t *testing.T, id, sum string) {
	t.Helper()
	status, out := f.do(t, http.MethodPost, "/v1/approvals/"+id, approvalToken, map[string]any{"sha256": sum})
	if status != http.StatusOK || out["state"] != "approved" {
		t.Fatalf("approve: %d %v", status, out)
	}
}

// TestServeApprovalFlow: an ask answered over HTTP is an allow once; the
// approver needs the token and the sha256 of the call they saw; a replay,
// a changed call and a declined request are refused.
func TestServeApprovalFlow(t *testing.T) {
	t.Parallel()
	f := startAskServe(t)
	id, sum := f.askHTTP(t, "/workspace/a")

	status, out := f.do(t, http.MethodGet, "/v1/approvals", "", nil)
	list, _ := out["approvals"].([]any)
	if status != http.StatusOK || len(list) != 1 || list[0].(map[string]any)["id"] != id || list[0].(map[string]any)["state"] != "pending" {
		t.Fatalf("GET /v1/approvals = %d %v", status, out)
	}
	if outcome, st, code, _ := f.decideHTTP(t, callDoc("/workspace/a", id)); outcome != "deny" || st != 428 || code != "ConfirmationUnavailable" {
		t.Fatalf("deciding before the answer = %s %d %s; want the 428 ConfirmationUnavailable deny", outcome, st, code)
	}

	// The caller who asked cannot approve without the token.
	if status, out := f.do(t, http.MethodPost, "/v1/approvals/"+id, "", map[string]any{"sha256": sum}); status != http.StatusUnauthorized {
		t.Fatalf("approve without the token: %d %v", status, out)
	}
	if status, out := f.do(t, http.MethodPost, "/v1/approvals/"+id, "wrong-token-0123456789", map[string]any{"sha256": sum}); status != http.StatusUnauthorized {
		t.Fatalf("approve with the wrong token: %d %v", status, out)
	}
	// The approver saw another call.
	_, other := f.askHTTP(t, "/workspace/other")
	if status, out := f.do(t, http.MethodPost, "/v1/approvals/"+id, approvalToken, map[string]any{"sha256": other}); status != http.StatusConflict || out["code"] != "ApprovalMismatch" {
		t.Fatalf("approve with another call's sha256: %d %v", status, out)
	}
	f.approveHTTP(t, id, sum)

	outcome, st, code, out := f.decideHTTP(t, callDoc("/workspace/a", id))
	if outcome != "allow" || st != http.StatusOK || code != "WriteNeedsConfirmation" || out["approval"] != nil {
		t.Fatalf("the approved call = %s %d %s %v; want a 200 allow keeping its reason", outcome, st, code, out["approval"])
	}
	// The replay.
	outcome, st, code, out = f.decideHTTP(t, callDoc("/workspace/a", id))
	if outcome != "deny" || st != 428 || code != "ConfirmationUnavailable" || !strings.Contains(reasonMessage(out), "approval "+id+" cannot be used") {
		t.Fatalf("the replay = %s %d %s: %s", outcome, st, code, reasonMessage(out))
	}

	// Approved for one path, sent with another: refused, and void.
	id, sum = f.askHTTP(t, "/workspace/a")
	f.approveHTTP(t, id, sum)
	if outcome, st, code, out := f.decideHTTP(t, callDoc("/workspace/b", id)); outcome != "deny" || st != 428 || code != "ConfirmationUnavailable" ||
		!strings.Contains(reasonMessage(out), "another call") {
		t.Fatalf("a changed argument = %s %d %s: %s", outcome, st, code, reasonMessage(out))
	}
	if outcome, _, _, _ := f.decideHTTP(t, callDoc("/workspace/a", id)); outcome != "deny" {
		t.Fatalf("the approval voided by a changed call still passed the original: %s", outcome)
	}

	// Declined: 403 ConfirmationDeclined.
	id, _ = f.askHTTP(t, "/workspace/a")
	if status, out := f.do(t, http.MethodPost, "/v1/approvals/"+id, approvalToken, map[string]any{"decline": true}); status != http.StatusOK || out["state"] != "declined" {
		t.Fatalf("decline: %d %v", status, out)
	}
	if outcome, st, code, _ := f.decideHTTP(t, callDoc("/workspace/a", id)); outcome != "deny" || st != http.StatusForbidden || code != "ConfirmationDeclined" {
		t.Fatalf("a declined approval = %s %d %s; want the 403 ConfirmationDeclined deny", outcome, st, code)
	}
	if !f.stderr.await("approval answered over HTTP") {
		t.Errorf("answers are not logged:\n%s", f.stderr)
	}
}

func reasonMessage(out map[string]any) string {
	rs, _ := out["reasons"].([]any)
	if len(rs) == 0 {
		return ""
	}
	m, _ := rs[0].(map[string]any)["message"].(string)
	return m
}

// TestServeApprovalAcrossProcesses: serve's request is approved with
// `mcpx-policy approve` and used by serve; eval's request (short-lived)
// is approved over HTTP and refused once it expired.
func TestServeApprovalAcrossProcesses(t *testing.T) {
	t.Parallel()
	f := startAskServe(t)
	id, sum := f.askHTTP(t, "/workspace/a")
	if code, out, stderr := cli(t, "approvals", "--state-dir", f.state); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "approve: mcpx-policy approve "+id+" --sha256 "+sum) {
		t.Fatalf("approvals = %d %s %s", code, out, stderr)
	}
	if code, out, stderr := cli(t, "approve", id, "--sha256", sum, "--state-dir", f.state); code != 0 {
		t.Fatalf("approve = %d %s %s", code, out, stderr)
	}
	if outcome, st, _, _ := f.decideHTTP(t, callDoc("/workspace/a", id)); outcome != "allow" || st != http.StatusOK {
		t.Fatalf("serve with the CLI's approval = %s %d", outcome, st)
	}

	call := filepath.Join(f.dir, "call.json")
	b, _ := json.Marshal(callDoc("/workspace/a", ""))
	os.WriteFile(call, b, 0o644)
	code, out, stderr := cli(t, "eval", "--config", f.config, "--state-dir", f.state, "--approval-ttl", "2s", "--format", "json", call)
	if code != 3 {
		t.Fatalf("eval = %d %s %s", code, out, stderr)
	}
	var doc struct {
		Approval decision.ApprovalRequest `json:"approval"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Approval.ID == "" {
		t.Fatalf("eval's request: %v: %s", err, out)
	}
	f.approveHTTP(t, doc.Approval.ID, doc.Approval.SHA256)
	time.Sleep(time.Until(doc.Approval.Expires) + 50*time.Millisecond)
	if outcome, st, code, out := f.decideHTTP(t, callDoc("/workspace/a", doc.Approval.ID)); outcome != "deny" || st != 428 || code != "ConfirmationUnavailable" ||
		!strings.Contains(reasonMessage(out), "expired") {
		t.Fatalf("an expired approval = %s %d %s: %s", outcome, st, code, reasonMessage(out))
	}
}

// TestServeApprovalNeverLoosensADeny: an approved ask that is a deny by the
// time it is decided (a write of another process's lost its answer) stays
// the ledger's 409 deny.
func TestServeApprovalNeverLoosensADeny(t *testing.T) {
	t.Parallel()
	f := startAskServe(t)
	id, sum := f.askHTTP(t, "/workspace/a")
	f.approveHTTP(t, id, sum)
	daemon := approvalEngine(t, f.dir, f.state, 0)
	w, err := daemon.Writes().Begin(askCall("/workspace/elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	w.Sent()
	w.Unknown("timeout")
	if outcome, st, code, _ := f.decideHTTP(t, callDoc("/workspace/a", id)); outcome != "deny" || st != http.StatusConflict || code != "UnknownOutcomePending" {
		t.Fatalf("the approved call after a lost write = %s %d %s; want the 409 UnknownOutcomePending deny", outcome, st, code)
	}
}

// TestServeAndCLIConsumersOneWins: one approval, decided at once by
// several HTTP requests to serve and several `eval --approval` processes:
// exactly one gets the allow.
func TestServeAndCLIConsumersOneWins(t *testing.T) {
	t.Parallel()
	f := startAskServe(t)
	call := filepath.Join(f.dir, "call.json")
	b, _ := json.Marshal(callDoc("/workspace/a", ""))
	os.WriteFile(call, b, 0o644)
	for round := range 2 {
		id, sum := f.askHTTP(t, "/workspace/a")
		f.approveHTTP(t, id, sum)
		var mu sync.Mutex
		var allows []string
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 4 {
			wg.Go(func() {
				<-start
				if outcome, _, _, _ := f.decideHTTP(t, callDoc("/workspace/a", id)); outcome == "allow" {
					mu.Lock()
					allows = append(allows, "http")
					mu.Unlock()
				}
			})
			wg.Go(func() {
				<-start
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, filepath.Join(binDir, "mcpx-policy"), "eval", "--config", f.config, "--state-dir", f.state, "--approval", id, call)
				cmd.Env = cleanEnv()
				err := cmd.Run()
				var ee *exec.ExitError
				switch {
				case err == nil:
					mu.Lock()
					allows = append(allows, "cli")
					mu.Unlock()
				case errors.As(err, &ee) && ee.ExitCode() == 2:
				default:
					t.Errorf("eval %d: %v", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(allows) != 1 {
			t.Fatalf("round %d: %d allows (%v), want exactly one", round, len(allows), allows)
		}
	}
}
