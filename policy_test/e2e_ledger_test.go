package policy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const exitConfig = `version: 1
policy:
  write: allow
servers:
  notes: {}
`

// TestE2EServerExitsAfterWrite: a server that dies on receiving a write
// leaves an unknown-outcome entry; further writes to it are refused — in
// later sessions too — until `mcpx-policy writes clear`.
func TestE2EServerExitsAfterWrite(t *testing.T) {
	t.Parallel()
	server := goServer(t, "../e2e/exitserver")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := newGate(t, "notes", exitConfig)

	cs := connect(t, ctx, g.command(t, server), nil)
	res := call(t, ctx, cs, "write_note", map[string]any{"text": "x"})
	if !res.IsError || !strings.Contains(text(res), "Outcome unknown") || !strings.Contains(printed(text(res)), "mcpx-policy writes clear notes --id ") {
		t.Fatalf("answer to the write that killed the server = %q; want the unknown outcome", text(res))
	}
	if cmd := printed(text(res)); !strings.HasSuffix(cmd, " --state-dir "+g.state+clearReason) {
		t.Fatalf("the clear command %q does not name the proxy's state dir", cmd)
	}
	cs.Close()

	writes := func() string {
		out, err := exec.Command(filepath.Join(binDir, "mcpx-policy"), "writes", "--state-dir", g.state).CombinedOutput()
		if err != nil {
			t.Fatalf("writes: %v\n%s", err, out)
		}
		return string(out)
	}
	if w := writes(); !strings.Contains(w, "notes\twrite_note") {
		t.Fatalf("writes lists no entry for the lost write:\n%s", w)
	}

	cs = connect(t, ctx, g.command(t, server), nil)
	res = call(t, ctx, cs, "write_note", map[string]any{"text": "again"})
	if refusal(res) != "UnknownOutcomePending" {
		t.Fatalf("a write in a new session = %q; want UnknownOutcomePending", text(res))
	}
	if res := call(t, ctx, cs, "read_note", map[string]any{}); res.IsError || text(res) != "note" {
		t.Fatalf("a read while writes are blocked = %q", text(res))
	}
	cs.Close()

	// The command the refusal prints runs as printed: from another
	// directory, in a shell without MCPX_POLICY_STATE_DIR.
	clear := printed(text(res))
	sh := exec.Command("sh", "-c", clear+" --reason e2e")
	sh.Dir = t.TempDir()
	sh.Env = append(cleanEnv(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := sh.CombinedOutput()
	if err != nil || !strings.Contains(clear, "--state-dir") {
		t.Fatalf("the printed command %q: %v\n%s", clear, err, out)
	}
	if w := writes(); strings.Contains(w, "write_note") {
		t.Fatalf("entry still listed after the clear:\n%s", w)
	}
	// Cleared, the write is forwarded again (and kills the server again).
	cs = connect(t, ctx, g.command(t, server), nil)
	if res := call(t, ctx, cs, "write_note", map[string]any{"text": "after clear"}); !strings.Contains(text(res), "Outcome unknown") {
		t.Fatalf("a write after the clear = %q; want it forwarded", text(res))
	}
}

// printed is the first command a result's text quotes in backticks.
func printed(text string) string {
	_, after, ok := strings.Cut(text, "`")
	cmd, _, ok2 := strings.Cut(after, "`")
	if !ok || !ok2 {
		return ""
	}
	return cmd
}

// TestE2EStreamableHTTP drives the proxy over Streamable HTTP (--listen).
func TestE2EStreamableHTTP(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr := freeLoopbackAddr(t)
	g := newGate(t, "fs", fsConfig(root), "--listen", addr)
	cmd := g.command(t, fsServer, root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(interrupt)
		cmd.Wait()
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpx-policy-e2e", Version: "1"}, nil)
	var cs *mcp.ClientSession
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	defer cs.Close()
	if _, ok := toolNames(t, ctx, cs)["move_file"]; ok {
		t.Error("hidden move_file listed over HTTP")
	}
	res := call(t, ctx, cs, "write_file", map[string]any{"path": filepath.Join(root, "x.txt"), "content": "no"})
	if refusal(res) != "ArgumentRuleViolation" {
		t.Errorf("write outside the workspace over HTTP = %q", text(res))
	}
	if res := call(t, ctx, cs, "list_allowed_directories", map[string]any{}); res.IsError || !strings.Contains(text(res), root) {
		t.Errorf("list_allowed_directories over HTTP = %q", text(res))
	}
	// One MCP session, one server process (the client's server/discover
	// probe must not start one).
	if n := strings.Count(cmd.Stderr.(*syncBuffer).String(), "Secure MCP Filesystem Server running"); n != 1 {
		t.Errorf("%d server processes started for one session; want 1", n)
	}
}
