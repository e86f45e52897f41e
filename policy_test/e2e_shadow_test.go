package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// shadowMeta is the decision a forwarded result carries in
// _meta["mcpx-policy/shadow"]: the outcome and reason codes the policy
// decided; ok is false when there is none.
func shadowMeta(meta map[string]any) (outcome string, codes []string, ok bool) {
	v, ok := meta["mcpx-policy/shadow"]
	if !ok {
		return "", nil, false
	}
	b, _ := json.Marshal(v)
	var d struct {
		Outcome string `json:"outcome"`
		Reasons []struct {
			Code string `json:"code"`
		} `json:"reasons"`
	}
	if json.Unmarshal(b, &d) != nil {
		return "", nil, false
	}
	for _, r := range d.Reasons {
		codes = append(codes, r.Code)
	}
	return d.Outcome, codes, true
}

// TestE2EShadowFilesystem: the real proxy in front of the filesystem MCP
// server with fs in shadow mode. A write the rule would refuse lands on
// disk, its result carrying the deny in _meta and the proxy's log saying
// so; a write that would ask runs without asking; a hidden tool stays
// hidden — not listed, answered as an unknown tool, never run.
func TestE2EShadowFilesystem(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	config := strings.Replace(fsConfig(root), "    writePolicy: allow\n", "    writePolicy: ask\n    enforce: shadow\n", 1)
	g := newGate(t, "fs", config)
	person := &answers{approve: false}
	cs := connect(t, ctx, g.command(t, fsServer, root), &mcp.ClientOptions{ElicitationHandler: person.handler})

	t.Run("a write the rule refuses runs, the deny beside it", func(t *testing.T) {
		outside := filepath.Join(root, "outside.txt")
		res := call(t, ctx, cs, "write_file", map[string]any{"path": outside, "content": "shadowed"})
		if res.IsError {
			t.Fatalf("the write was refused: %s", text(res))
		}
		if b, err := os.ReadFile(outside); err != nil || string(b) != "shadowed" {
			t.Fatalf("%s = %q, %v; want the write done", outside, b, err)
		}
		outcome, codes, ok := shadowMeta(res.Meta)
		if !ok || outcome != "deny" || len(codes) == 0 || codes[0] != "ArgumentRuleViolation" {
			t.Errorf("_meta %v; want the ArgumentRuleViolation deny under mcpx-policy/shadow", res.Meta)
		}
		if strings.Contains(text(res), "ArgumentRuleViolation") {
			t.Errorf("the tool's content mentions the shadow decision: %s", text(res))
		}
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(g.stderr.String(), "outcome=allow shadow=deny code=ArgumentRuleViolation"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the proxy never logged the shadow decision:\n%s", g.stderr)
			}
		}
	})

	t.Run("a write that would ask runs without asking", func(t *testing.T) {
		inside := filepath.Join(root, "workspace", "a.txt")
		res := call(t, ctx, cs, "write_file", map[string]any{"path": inside, "content": "unasked"})
		if res.IsError {
			t.Fatalf("the write was refused: %s", text(res))
		}
		if b, err := os.ReadFile(inside); err != nil || string(b) != "unasked" {
			t.Fatalf("%s = %q, %v", inside, b, err)
		}
		if p := person.prompts(); len(p) != 0 {
			t.Errorf("the person was asked %q", p)
		}
		if outcome, codes, ok := shadowMeta(res.Meta); !ok || outcome != "ask" || len(codes) != 1 || codes[0] != "WriteNeedsConfirmation" {
			t.Errorf("_meta %v; want the WriteNeedsConfirmation ask", res.Meta)
		}
	})

	t.Run("an allowed read carries nothing", func(t *testing.T) {
		res := call(t, ctx, cs, "read_text_file", map[string]any{"path": filepath.Join(root, "workspace", "a.txt")})
		if res.IsError || !strings.Contains(text(res), "unasked") {
			t.Fatalf("read: %s", text(res))
		}
		if _, _, ok := shadowMeta(res.Meta); ok {
			t.Errorf("an allow carries a shadow decision: %v", res.Meta)
		}
	})

	t.Run("a hidden tool stays hidden", func(t *testing.T) {
		if _, ok := toolNames(t, ctx, cs)["move_file"]; ok {
			t.Error("move_file is listed in shadow mode")
		}
		src := filepath.Join(root, "workspace", "a.txt")
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "move_file", Arguments: map[string]any{"source": src, "destination": src + ".moved"}})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams || rpc.Message != `unknown tool "move_file"` {
			t.Errorf("move_file answered %v; want the unknown-tool error", err)
		}
		if _, err := os.Stat(src + ".moved"); err == nil {
			t.Error("the hidden move_file ran")
		}
	})
}

// TestE2EShadowLedger: a write that shadow mode let through and whose
// outcome was lost (the server died on it) is recorded, its answer says
// what the policy decided, and the entry blocks further writes in shadow
// mode too — in a later session — while reads go on.
func TestE2EShadowLedger(t *testing.T) {
	t.Parallel()
	server := goServer(t, "../e2e/exitserver")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := newGate(t, "notes", "version: 1\npolicy:\n  write: deny\n  enforce: shadow\nservers:\n  notes: {}\n")

	cs := connect(t, ctx, g.command(t, server), nil)
	res := call(t, ctx, cs, "write_note", map[string]any{"text": "x"})
	if !strings.Contains(text(res), "Outcome unknown") {
		t.Fatalf("the write = %q; want it sent and its outcome unknown", text(res))
	}
	if outcome, codes, ok := shadowMeta(res.Meta); !ok || outcome != "deny" || len(codes) != 1 || codes[0] != "WriteDenied" {
		t.Errorf("_meta %v; want the WriteDenied deny under mcpx-policy/shadow", res.Meta)
	}
	cs.Close()
	out, err := exec.Command(filepath.Join(binDir, "mcpx-policy"), "writes", "--state-dir", g.state).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "notes\twrite_note") {
		t.Fatalf("writes: %v\n%s", err, out)
	}

	cs = connect(t, ctx, g.command(t, server), nil)
	if res := call(t, ctx, cs, "write_note", map[string]any{"text": "again"}); refusal(res) != "UnknownOutcomePending" {
		t.Fatalf("a write in a new session = %q; want UnknownOutcomePending", text(res))
	}
	if res := call(t, ctx, cs, "read_note", map[string]any{}); res.IsError || text(res) != "note" {
		t.Fatalf("a read while writes are blocked = %q", text(res))
	}
}

// TestE2EShadowScripted: the real proxy in front of the scripted server,
// which records every call it runs. In shadow mode a would-be deny runs
// with exactly its arguments; what is never relaxed never reaches the
// server: a hidden tool, arguments that are not an object, a frame with
// case-variant keys, a policy that cannot decide.
func TestE2EShadowScripted(t *testing.T) {
	t.Parallel()
	config := fmt.Sprintf(strictE2EConfig, "deny") + "    enforce: shadow\n"
	g := newGate(t, "fs", config)
	s := startScripted(t, g, `{"tools":`+strictE2ETools+`}`, false)

	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/etc/x","content":"y"}}}`)
	a := s.answer(t, "1")
	r, _ := a["result"].(map[string]any)
	meta, _ := r["_meta"].(map[string]any)
	if outcome, codes, ok := shadowMeta(meta); !ok || outcome != "deny" || strings.Join(codes, ",") != "ArgumentRuleViolation,WriteDenied" {
		t.Errorf("answer %v; want the result with the deny under _meta", a)
	}

	s.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list, _ := json.Marshal(s.answer(t, "2"))
	if strings.Contains(string(list), "move_file") {
		t.Errorf("tools/list shows the hidden move_file: %s", list)
	}
	s.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"move_file","arguments":{"source":"/ws/a","destination":"/etc/a"}}}`)
	if code, msg := rpcError(s.answer(t, "3")); code != "-32602" || msg != `unknown tool "move_file"` {
		t.Errorf("move_file: error %s %q; want the unknown-tool error", code, msg)
	}
	s.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":["/etc/x"]}}`)
	if code := reasonCode(s.answer(t, "4")); code != "InvalidInput" {
		t.Errorf("arguments not an object: %s; want an InvalidInput refusal", code)
	}
	s.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","Name":"write_file","arguments":{"path":"/ws/a"}}}`)
	if code, _ := rpcError(s.answer(t, "5")); code != "-32602" {
		t.Errorf("case-variant keys: error %s; want the -32602 refusal", code)
	}
	if ran := s.executed(t); len(ran) != 1 || ran[0] != `write_file {"content":"y","path":"/etc/x"}` {
		t.Errorf("the server ran %q; want only the shadowed write", ran)
	}

	// A policy that cannot decide: an override whose evaluation fails.
	dir := filepath.Dir(g.config)
	if err := os.WriteFile(filepath.Join(dir, "broken.rego"), []byte("package mcpx.overrides\n\n_owner := \"a\" if input.server == \"fs\"\n\n_owner := \"b\" if startswith(input.tool.name, \"write_\")\n\ndeny contains {\"code\": \"Unowned\", \"message\": \"no owner\"} if not _owner\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := newGate(t, "fs", strings.Replace(config, "policy: {write: deny, unknownArgs: reject}", "policy: {write: deny, unknownArgs: reject, overrides: ["+filepath.Join(dir, "broken.rego")+"]}", 1))
	s = startScripted(t, broken, `{"tools":`+strictE2ETools+`}`, false)
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/ws/a","content":"y"}}}`)
	if code := reasonCode(s.answer(t, "1")); code != "PolicyError" {
		t.Errorf("with a broken override: %s; want a PolicyError refusal", code)
	}
	if ran := s.executed(t); len(ran) != 0 {
		t.Errorf("the server ran %q; want nothing", ran)
	}
}

// TestE2EShadowPinnedDefinitions: in shadow mode a would-be WriteDenied
// write runs, but once the server changes its tools (pinTools) the changed
// ones are hidden from tools/list and refused with ToolDefinitionChanged —
// the server never gets them — and under pinTools: ask a person is still
// asked before a changed tool runs.
func TestE2EShadowPinnedDefinitions(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, _, record, changed := pinSession(t, ctx, "version: 1\npolicy: {write: deny, enforce: shadow}\nservers:\n  script:\n    pinTools: deny\n", false)

	res := call(t, ctx, cs, "write_doc", map[string]any{"id": "a", "text": "x"})
	if outcome, codes, ok := shadowMeta(res.Meta); res.IsError || !ok || outcome != "deny" || len(codes) != 1 || codes[0] != "WriteDenied" {
		t.Fatalf("write_doc before the change: %s %v; want it run, the WriteDenied beside it", text(res), res.Meta)
	}
	call(t, ctx, cs, "status", map[string]any{}) // the server changes its tools now
	awaitListChanged(t, changed)
	if got := listedNames(t, ctx, cs); !slices.Equal(got, []string{"status"}) {
		t.Fatalf("tools/list after the change: %v; want the changed tools hidden in shadow mode too", got)
	}
	for _, tool := range []string{"read_doc", "write_doc"} {
		if res := call(t, ctx, cs, tool, map[string]any{"id": "a", "text": "y"}); refusal(res) != "ToolDefinitionChanged" {
			t.Errorf("%s after the change: %s; want ToolDefinitionChanged", tool, text(res))
		}
	}
	if n, m := calls(t, record, "read_doc"), calls(t, record, "write_doc"); n != 0 || m != 1 {
		t.Errorf("the server got %d read_doc and %d write_doc calls; want 0 and the 1 before the change", n, m)
	}

	// pinTools: ask — the changed read_doc is put to the person first.
	asked := make(chan string, 4)
	g := newGate(t, "script", "version: 1\npolicy: {enforce: shadow}\nservers:\n  script:\n    pinTools: ask\n")
	server := goServer(t, "../e2e/scriptserver")
	dir := t.TempDir()
	script, record2 := filepath.Join(dir, "script.json"), filepath.Join(dir, "record.jsonl")
	if err := os.WriteFile(script, []byte(pinScript), 0o644); err != nil {
		t.Fatal(err)
	}
	changed2 := make(chan struct{}, 1)
	cs2 := connect(t, ctx, g.command(t, server, script, record2), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed2 <- struct{}{}:
			default:
			}
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	if res := call(t, ctx, cs2, "read_doc", map[string]any{"id": "a"}); res.IsError || len(asked) != 0 {
		t.Fatalf("read_doc before the change: %s (asked %d times)", text(res), len(asked))
	}
	call(t, ctx, cs2, "status", map[string]any{})
	awaitListChanged(t, changed2)
	if res := call(t, ctx, cs2, "read_doc", map[string]any{"id": "b"}); res.IsError || !strings.HasPrefix(text(res), "ran read_doc") {
		t.Fatalf("the confirmed changed read_doc: %s", text(res))
	}
	select {
	case msg := <-asked:
		if !strings.Contains(msg, "read_doc") {
			t.Errorf("the person was asked %q", msg)
		}
	default:
		t.Error("the changed read_doc ran without asking the person")
	}
}
