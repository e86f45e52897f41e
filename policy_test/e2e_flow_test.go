package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// flowFSConfig labels the filesystem server's tools — a file read is
// untrusted input, a directory listing private data, a file write sends
// data out — with two flow rules: after untrusted input a write asks;
// after untrusted input and private data both, it is denied.
const flowFSConfig = `version: 1
servers:
  fs:
    writePolicy: allow
    labels:
      - {label: untrusted-input, tools: [read_text_file]}
      - {label: private-data, tools: [list_directory]}
      - {label: egress, tools: [write_file]}
    flows:
      - {id: ask-after-reading, after: [untrusted-input], calls: [egress], then: ask}
      - {id: no-exfiltration, after: [untrusted-input, private-data], calls: [egress], then: deny}
`

// TestE2EFlowRulesThroughTheProxy: the proxy in front of the npm
// filesystem server remembers, per MCP session, the labels of the calls it
// sent. A write before any read is sent; after a read the next write asks
// (this client cannot answer, so it is refused and not sent); after a
// listing too, it is denied with FlowDenied, saying what lifts it, and
// not sent. A second MCP session starts clean: its write is sent.
func TestE2EFlowRulesThroughTheProxy(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	g := newGate(t, "fs", flowFSConfig)
	a := connect(t, ctx, g.command(t, fsServer, root), nil)
	written := func(name string) bool {
		_, err := os.Stat(filepath.Join(root, name))
		return err == nil
	}
	if res := call(t, ctx, a, "write_file", map[string]any{"path": filepath.Join(root, "a.txt"), "content": "x"}); res.IsError || !written("a.txt") {
		t.Fatalf("a write before any read: %s", text(res))
	}
	if res := call(t, ctx, a, "read_text_file", map[string]any{"path": filepath.Join(root, "a.txt")}); res.IsError {
		t.Fatalf("read: %s", text(res))
	}
	res := call(t, ctx, a, "write_file", map[string]any{"path": filepath.Join(root, "b.txt"), "content": "x"})
	if !res.IsError || !strings.Contains(text(res), "FlowNeedsConfirmation") || written("b.txt") {
		t.Fatalf("a write after a read = %s (written %v); want the flow rule's ask, refused here, not sent", text(res), written("b.txt"))
	}
	if res := call(t, ctx, a, "list_directory", map[string]any{"path": root}); res.IsError {
		t.Fatalf("list: %s", text(res))
	}
	res = call(t, ctx, a, "write_file", map[string]any{"path": filepath.Join(root, "c.txt"), "content": "x"})
	if refusal(res) != "FlowDenied" || !strings.Contains(text(res), `flow rule "no-exfiltration"`) ||
		!strings.Contains(text(res), "lifted only in a new session") || written("c.txt") {
		t.Fatalf("a write after a read and a listing = %s (written %v); want FlowDenied, not sent", text(res), written("c.txt"))
	}
	a.Close()

	b := connect(t, ctx, g.command(t, fsServer, root), nil)
	defer b.Close()
	if res := call(t, ctx, b, "write_file", map[string]any{"path": filepath.Join(root, "d.txt"), "content": "x"}); res.IsError || !written("d.txt") {
		t.Fatalf("a write in a new session: %s", text(res))
	}
}
