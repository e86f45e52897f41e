package policy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// TestE2ELoopBreakerThroughTheProxy: the proxy in front of the npm
// filesystem server refuses the third identical write_file within ten
// minutes with RepeatedCall (not sent: the server's file keeps the second
// content), while the same tool with other arguments, and a read, pass.
func TestE2ELoopBreakerThroughTheProxy(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	g := newGate(t, "fs", `version: 1
servers:
  fs:
    writePolicy: allow
    loopBreakers:
      - {id: fs-loops, max: 2, window: 10m}
`)
	cs := connect(t, ctx, g.command(t, fsServer, root), nil)
	p := filepath.Join(root, "loop.txt")
	same := map[string]any{"path": p, "content": "again"}
	if res := call(t, ctx, cs, "write_file", map[string]any{"path": p, "content": "first"}); res.IsError {
		t.Fatal(text(res))
	}
	for i := 0; i < 2; i++ {
		if res := call(t, ctx, cs, "write_file", same); res.IsError {
			t.Fatalf("identical write %d: %s", i+1, text(res))
		}
	}
	if err := os.WriteFile(p, []byte("changed by the user"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := call(t, ctx, cs, "write_file", same)
	if refusal(res) != "RepeatedCall" || !strings.Contains(text(res), `the most loop breaker "fs-loops" allows`) || !retryAtLoop.MatchString(text(res)) {
		t.Fatalf("the third identical write = %s; want RepeatedCall", text(res))
	}
	if b, _ := os.ReadFile(p); string(b) != "changed by the user" {
		t.Errorf("the refused write reached the server: the file holds %q", b)
	}
	if res := call(t, ctx, cs, "write_file", map[string]any{"path": p, "content": "something else"}); res.IsError {
		t.Errorf("another write of the same tool: %s", text(res))
	}
	if res := call(t, ctx, cs, "read_text_file", map[string]any{"path": p}); res.IsError {
		t.Errorf("a read: %s", text(res))
	}
}

// TestE2ELoopBreakerThroughServeAndSDK: serve refuses the third identical
// write it would answer allowed (429), whoever sends it; through the SDK
// the third identical dispatch is a RepeatedCall deny, its Begin refused.
func TestE2ELoopBreakerThroughServeAndSDK(t *testing.T) {
	t.Parallel()
	conf := `version: 1
policy:
  write: allow
servers:
  notes:
    loopBreakers:
      - {id: note-loops, max: 2, window: 60s}
`
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": conf})
	p := runServe(t, nil, "--config", filepath.Join(dir, "mcpx-policy.yaml"), "--state-dir", filepath.Join(dir, "state"))
	for i, principal := range []string{"alice", "bob", "carol"} {
		status, _, body := p.post(t, "/v1/decide", budgetDoc(principal, "append_note", false))
		allowed := strings.Contains(string(body), `"outcome":"allow"`)
		switch {
		case status != 200:
			t.Fatalf("decide: %d %s", status, body)
		case i < 2 && !allowed:
			t.Fatalf("identical write %d: %s", i+1, body)
		case i == 2 && (allowed || !strings.Contains(string(body), `"code":"RepeatedCall"`) || !strings.Contains(string(body), `"status":429`)):
			t.Fatalf("third identical write: %s", body)
		}
	}

	eng, _ := newEngine(t, conf)
	defer eng.Close()
	c := decision.Call{Server: "notes", Tool: decision.Tool{Name: "append_note", Annotations: &decision.Annotations{ReadOnlyHint: ptr(false)}},
		Args: map[string]any{"text": "same"}}
	for i := 0; i < 2; i++ {
		if d := decide(t, eng, c); d.Outcome != decision.Allow {
			t.Fatalf("identical call %d: %+v", i+1, d)
		}
		if err := dispatch(t, eng, c); err != nil {
			t.Fatal(err)
		}
	}
	if d := decide(t, eng, c); d.Outcome != decision.Deny || d.First().Code != decision.RepeatedCall {
		t.Fatalf("third identical call: %+v", d)
	}
	var refused *decision.Refusal
	if err := dispatch(t, eng, c); !errors.As(err, &refused) || refused.Decision.First().Code != decision.RepeatedCall {
		t.Errorf("third identical dispatch: %v", err)
	}
	other := c
	other.Args = map[string]any{"text": fmt.Sprint("other")}
	if d := decide(t, eng, other); d.Outcome != decision.Allow {
		t.Errorf("another call: %+v", d)
	}
}

// retryAtLoop is the retry time a RepeatedCall message names.
var retryAtLoop = regexp.MustCompile(`refused until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
