package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// budgetFSConfig allows writes to the filesystem server under two write
// budgets: at most 2 write_file calls per MCP session, and at most 3 writes
// of any tool to fs in all (every session of every process sharing the
// state dir) in an hour.
func budgetFSConfig(root string) string {
	return fmt.Sprintf(`version: 1
servers:
  fs:
    writePolicy: allow
    argumentRules:
      - id: fs-writes-in-workspace
        tools: ["write_file"]
        schema:
          properties:
            path: {type: string, pathWithin: ['%s/workspace']}
    budgets:
      - id: notes-per-session
        tools: [write_file]
        max: 2
        window: 1h
        per: session
      - id: fs-writes
        max: 3
        window: 1h
`, root)
}

// retryAt is the retry time a WriteBudgetExceeded message names.
var retryAt = regexp.MustCompile(`refused until (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) \(retry then\)`)

// TestE2EBudgetThroughTheProxy: the proxy in front of the npm
// filesystem server counts each write it sends. A session's third
// write_file is refused with WriteBudgetExceeded — not sent: the file is
// not written — and the refusal says when to retry (within the hour); a
// read still passes. A second proxy process (a new MCP session, the same
// state dir) has its own session budget but shares the server's, so its
// second write is refused by fs-writes. The state dir's ledger counts
// exactly the three writes sent.
func TestE2EBudgetThroughTheProxy(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	root := t.TempDir()
	ws := filepath.Join(root, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	g := newGate(t, "fs", budgetFSConfig(root))
	a := connect(t, ctx, g.command(t, fsServer, root), nil)
	for i := 1; i <= 2; i++ {
		p := filepath.Join(ws, fmt.Sprintf("a%d.txt", i))
		if res := call(t, ctx, a, "write_file", map[string]any{"path": p, "content": "x"}); res.IsError {
			t.Fatalf("write %d in session a: %s", i, text(res))
		}
	}
	before := time.Now().UTC()
	res := call(t, ctx, a, "write_file", map[string]any{"path": filepath.Join(ws, "a3.txt"), "content": "x"})
	if refusal(res) != "WriteBudgetExceeded" || !strings.Contains(text(res), "write budget \"notes-per-session\" allows 2 writes per 1h per session") {
		t.Fatalf("third write in session a = %s; want WriteBudgetExceeded of notes-per-session", text(res))
	}
	m := retryAt.FindStringSubmatch(text(res))
	if m == nil {
		t.Fatalf("the refusal names no retry time: %s", text(res))
	}
	at, err := time.Parse(time.RFC3339, m[1])
	if err != nil || at.Before(before.Add(59*time.Minute)) || at.After(time.Now().Add(time.Hour+time.Second)) {
		t.Errorf("retry time %s is not an hour after the first write (%v)", m[1], err)
	}
	if _, err := os.Stat(filepath.Join(ws, "a3.txt")); !os.IsNotExist(err) {
		t.Errorf("the refused write reached the server: %v", err)
	}
	if res := call(t, ctx, a, "read_text_file", map[string]any{"path": filepath.Join(ws, "a1.txt")}); res.IsError {
		t.Errorf("a read after the budget is spent: %s", text(res))
	}
	a.Close()

	b := connect(t, ctx, g.command(t, fsServer, root), nil)
	if res := call(t, ctx, b, "write_file", map[string]any{"path": filepath.Join(ws, "b1.txt"), "content": "x"}); res.IsError {
		t.Fatalf("first write in session b: %s", text(res))
	}
	res = call(t, ctx, b, "create_directory", map[string]any{"path": filepath.Join(ws, "dir")})
	if refusal(res) != "WriteBudgetExceeded" || !strings.Contains(text(res), "write budget \"fs-writes\" allows 3 writes per 1h,") {
		t.Fatalf("fourth write to fs = %s; want WriteBudgetExceeded of fs-writes", text(res))
	}
	if _, err := os.Stat(filepath.Join(ws, "dir")); !os.IsNotExist(err) {
		t.Errorf("the refused create_directory reached the server: %v", err)
	}
	b.Close()

	raw, err := os.ReadFile(filepath.Join(g.state, "ledger.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Dispatched []struct{ Tool, Session string } `json:"dispatched"`
		Entries    []any                            `json:"entries"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Dispatched) != 3 || len(doc.Entries) != 0 {
		t.Errorf("the ledger counts %d writes (want the 3 sent) and %d entries:\n%s", len(doc.Dispatched), len(doc.Entries), raw)
	}
}

// budgetServeConfig caps destructive writes per principal at 2 a minute.
const budgetServeConfig = `version: 1
policy:
  write: allow
servers:
  notes:
    budgets:
      - id: deletes
        writes: destructive
        max: 2
        window: 60s
        per: principal
`

func budgetDoc(principal, tool string, destructive bool) string {
	return fmt.Sprintf(`{"server": "notes", "principal": {"id": %q}, "tool": {"name": %q, "annotations": {"readOnlyHint": false, "destructiveHint": %v}}, "args": {"id": 1}}`, principal, tool, destructive)
}

// TestE2EBudgetThroughServe: serve's POST /v1/decide counts each write it
// answers allowed (its caller runs it). alice's third destructive write
// within a minute is refused — a 429 on the daemon surface, naming when
// to retry — while bob's and alice's non-destructive writes still pass.
func TestE2EBudgetThroughServe(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": budgetServeConfig})
	p := runServe(t, nil, "--config", filepath.Join(dir, "mcpx-policy.yaml"), "--state-dir", filepath.Join(dir, "state"))
	decide := func(doc string) (string, string) {
		t.Helper()
		status, _, body := p.post(t, "/v1/decide", doc)
		if status != 200 {
			t.Fatalf("decide: %d %s", status, body)
		}
		var a struct {
			Outcome  string
			Reasons  []struct{ Code, Message string }
			Rendered struct{ Status int }
		}
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatal(err)
		}
		if a.Outcome == "allow" {
			return "allow", ""
		}
		if len(a.Reasons) == 0 || a.Rendered.Status != 429 {
			t.Fatalf("refusal %s", body)
		}
		return a.Reasons[0].Code, a.Reasons[0].Message
	}
	for i := 0; i < 2; i++ {
		if got, msg := decide(budgetDoc("alice", "delete_note", true)); got != "allow" {
			t.Fatalf("alice's delete %d: %s %s", i+1, got, msg)
		}
	}
	got, msg := decide(budgetDoc("alice", "delete_note", true))
	if got != "WriteBudgetExceeded" || !retryAt.MatchString(msg) || !strings.Contains(msg, "allows 2 destructive writes per 60s per principal") {
		t.Fatalf("alice's third delete: %s %s", got, msg)
	}
	if got, msg := decide(budgetDoc("bob", "delete_note", true)); got != "allow" {
		t.Errorf("bob's delete: %s %s", got, msg)
	}
	if got, msg := decide(budgetDoc("alice", "append_note", false)); got != "allow" {
		t.Errorf("alice's non-destructive write: %s %s", got, msg)
	}
}
