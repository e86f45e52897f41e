package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/server"
)

const authzenBudgetConfig = `version: 1
policy:
  write: allow
servers:
  notes:
    budgets:
      - {id: note-deletes, writes: destructive, max: 2, window: 1h, per: principal}
    loopBreakers:
      - {id: note-loops, max: 2, window: 1h}
`

// TestAuthZENCountsLikeDecide: an AuthZEN evaluation answered true is
// counted as POST /v1/decide counts an allow (the PEP asked because it is
// about to run the call): alice's third destructive write is false with
// WriteBudgetExceeded — whichever route the first two went through — and
// the third identical write of a batch is false with RepeatedCall, while
// bob's writes still pass.
func TestAuthZENCountsLikeDecide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(authzenBudgetConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(server.New(eng, server.Options{DecisionLog: io.Discard}))
	defer srv.Close()
	post := func(path, body string) []byte {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	tool := func(name string, destructive bool) string {
		return `{"type": "mcp_tool", "id": "notes/` + name + `", "properties": {"annotations": {"readOnlyHint": false, "destructiveHint": ` +
			map[bool]string{true: "true", false: "false"}[destructive] + `}}}`
	}
	evaluation := func(subject, name string, destructive bool, args string) string {
		return `{"subject": {"type": "user", "id": "` + subject + `"}, "action": {"name": "tools/call"}, "resource": ` + tool(name, destructive) +
			`, "context": {"arguments": ` + args + `}}`
	}
	verdict := func(b []byte) string {
		var r server.EvaluationResponse
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		if r.Decision {
			return "true"
		}
		return string(r.Context.Code)
	}
	// the first delete through /v1/decide, the second through AuthZEN:
	// one budget
	post("/v1/decide", `{"server": "notes", "principal": {"id": "alice"}, "tool": {"name": "delete_note", "annotations": {"readOnlyHint": false}}, "args": {"id": 1}}`)
	if got := verdict(post(server.EvaluationPath, evaluation("alice", "delete_note", true, `{"id": 2}`))); got != "true" {
		t.Fatalf("alice's second delete: %s", got)
	}
	if got := verdict(post(server.EvaluationPath, evaluation("alice", "delete_note", true, `{"id": 3}`))); got != "WriteBudgetExceeded" {
		t.Fatalf("alice's third delete through AuthZEN: %s, want WriteBudgetExceeded", got)
	}
	if got := verdict(post(server.EvaluationPath, evaluation("bob", "delete_note", true, `{"id": 4}`))); got != "true" {
		t.Errorf("bob's delete: %s", got)
	}
	var batch server.EvaluationsResponse
	same := evaluation("carol", "append_note", false, `{"text": "same"}`)
	if err := json.Unmarshal(post(server.EvaluationsPath, `{"evaluations": [`+same+`, `+same+`, `+same+`]}`), &batch); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range batch.Evaluations {
		if e.Decision {
			got = append(got, "true")
		} else {
			got = append(got, string(e.Context.Code))
		}
	}
	if strings.Join(got, " ") != "true true RepeatedCall" {
		t.Errorf("three identical appends in a batch: %v, want true true RepeatedCall", got)
	}
}
