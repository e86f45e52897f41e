package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// transparentConfig allows everything the filesystem server offers.
const transparentConfig = `version: 1
policy:
  write: allow
  unknownArgs: off
servers:
  fs: {}
`

// session runs a scripted filesystem session and returns every answer as
// JSON, one entry per step: results, the server's own errors, protocol
// errors.
func scriptedSession(t *testing.T, ctx context.Context, cs *mcp.ClientSession, root string) []string {
	t.Helper()
	var out []string
	add := func(step string, v any, err error) {
		b, merr := json.Marshal(v)
		if merr != nil {
			t.Fatal(merr)
		}
		s := fmt.Sprintf("%s: %s", step, b)
		if err != nil {
			s += fmt.Sprintf(" error: %v", err)
		}
		out = append(out, s)
	}
	init := cs.InitializeResult()
	add("initialize", init, nil)
	tools, err := cs.ListTools(ctx, nil)
	add("tools/list", tools, err)
	p := func(parts ...string) string { return filepath.Join(append([]string{root}, parts...)...) }
	steps := []struct {
		tool string
		args map[string]any
	}{
		{"list_allowed_directories", map[string]any{}},
		{"create_directory", map[string]any{"path": p("a")}},
		{"write_file", map[string]any{"path": p("a", "f.txt"), "content": "one\ntwo\nthree\n"}},
		{"read_text_file", map[string]any{"path": p("a", "f.txt")}},
		{"read_text_file", map[string]any{"path": p("a", "f.txt"), "head": 1}},
		{"edit_file", map[string]any{"path": p("a", "f.txt"), "edits": []any{map[string]any{"oldText": "two", "newText": "2"}}, "dryRun": true}},
		{"edit_file", map[string]any{"path": p("a", "f.txt"), "edits": []any{map[string]any{"oldText": "two", "newText": "2"}}}},
		{"write_file", map[string]any{"path": p("a", "g.txt"), "content": "g"}},
		{"read_multiple_files", map[string]any{"paths": []any{p("a", "f.txt"), p("a", "g.txt"), p("a", "missing.txt")}}},
		{"list_directory", map[string]any{"path": p("a")}},
		{"directory_tree", map[string]any{"path": root}},
		{"search_files", map[string]any{"path": root, "pattern": "*.txt"}},
		{"move_file", map[string]any{"source": p("a", "g.txt"), "destination": p("a", "h.txt")}},
		{"list_directory", map[string]any{"path": p("a")}},
		{"read_text_file", map[string]any{"path": p("a", "missing.txt")}},          // the server's error
		{"read_text_file", map[string]any{}},                                       // the server's validation error
		{"write_file", map[string]any{"path": "/etc/not-allowed", "content": "x"}}, // the server's own access check
	}
	for i, s := range steps {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: s.tool, Arguments: s.args})
		add(fmt.Sprintf("%d %s", i, s.tool), res, err)
	}
	res, err := cs.ListResources(ctx, nil)
	add("resources/list", res, err)
	prompts, err := cs.ListPrompts(ctx, nil)
	add("prompts/list", prompts, err)
	add("ping", nil, cs.Ping(ctx, nil))
	return out
}

// TestE2ETransparency runs the same scripted session straight to the
// filesystem server and through the proxy, with a policy that allows
// everything, and wants every answer identical — results, the server's own
// errors, the tool list, initialize. (A tool the server does not list is
// not "allowed": the proxy answers it as unknown itself, exactly as a
// hidden tool; TestE2EFilesystem checks that answer.)
func TestE2ETransparency(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := filepath.Join(t.TempDir(), "root")
	run := func(cmd func() *exec.Cmd) []string {
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		cs := connect(t, ctx, cmd(), nil)
		defer cs.Close()
		return scriptedSession(t, ctx, cs, root)
	}
	g := newGate(t, "fs", transparentConfig)
	straight := run(func() *exec.Cmd { return direct(fsServer, root) })
	proxied := run(func() *exec.Cmd { return g.command(t, fsServer, root) })
	if len(straight) != len(proxied) {
		t.Fatalf("%d answers straight, %d through the proxy", len(straight), len(proxied))
	}
	for i := range straight {
		if straight[i] != proxied[i] {
			t.Errorf("answer %d differs\nstraight: %s\nproxied:  %s", i, straight[i], proxied[i])
		}
	}
}
