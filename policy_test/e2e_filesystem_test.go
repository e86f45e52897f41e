package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fsConfig gates the filesystem server: writes allowed but only under
// root/workspace, move_file hidden, unknown arguments warned about.
func fsConfig(root string) string {
	return fmt.Sprintf(`version: 1
policy:
  write: ask
  unknownArgs: warn
servers:
  fs:
    writePolicy: allow
    hiddenTools: ["move_file"]
    argumentRules:
      - id: fs-writes-in-workspace
        tools: ["write_file", "edit_file", "create_directory"]
        description: writes stay in the workspace
        schema:
          properties:
            path: {type: string, pathWithin: ['%s/workspace']}
`, root)
}

func TestE2EFilesystem(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := newGate(t, "fs", fsConfig(root))
	cs := connect(t, ctx, g.command(t, fsServer, root), nil)

	t.Run("a write outside the workspace is refused before the server sees it", func(t *testing.T) {
		// The server itself allows all of root; only the rule refuses.
		outside := filepath.Join(root, "outside.txt")
		res := call(t, ctx, cs, "write_file", map[string]any{"path": outside, "content": "no"})
		if code := refusal(res); code != "ArgumentRuleViolation" {
			t.Fatalf("refusal code %q; want ArgumentRuleViolation (result %s)", code, text(res))
		}
		if !strings.Contains(text(res), "fs-writes-in-workspace") {
			t.Errorf("refusal text does not name the rule:\n%s", text(res))
		}
		if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%v): the call reached the server", outside, err)
		}
	})

	t.Run("an allowed write lands on disk", func(t *testing.T) {
		inside := filepath.Join(root, "workspace", "a.txt")
		res := call(t, ctx, cs, "write_file", map[string]any{"path": inside, "content": "hello from the gate"})
		if res.IsError {
			t.Fatalf("allowed write failed: %s", text(res))
		}
		b, err := os.ReadFile(inside)
		if err != nil || string(b) != "hello from the gate" {
			t.Fatalf("file = %q, %v", b, err)
		}
	})

	t.Run("a hidden tool is absent and refused like an unknown tool", func(t *testing.T) {
		tools := toolNames(t, ctx, cs)
		if _, ok := tools["move_file"]; ok {
			t.Error("move_file is in tools/list")
		}
		if _, ok := tools["write_file"]; !ok {
			t.Fatalf("write_file is missing from tools/list: %v", tools)
		}
		src := filepath.Join(root, "workspace", "a.txt")
		_, hiddenErr := cs.CallTool(ctx, &mcp.CallToolParams{Name: "move_file", Arguments: map[string]any{"source": src, "destination": src + ".moved"}})
		_, unknownErr := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
		var h, u *jsonrpc.Error
		if !errors.As(hiddenErr, &h) || !errors.As(unknownErr, &u) {
			t.Fatalf("want JSON-RPC errors for both; got %v and %v", hiddenErr, unknownErr)
		}
		if h.Code != u.Code || h.Message != strings.ReplaceAll(u.Message, "no_such_tool", "move_file") {
			t.Errorf("hidden tool answer %d %q differs from the unknown tool's %d %q", h.Code, h.Message, u.Code, u.Message)
		}
		if h.Code != jsonrpc.CodeInvalidParams || h.Message != `unknown tool "move_file"` {
			t.Errorf("hidden tool answer = %d %q; want the SDK's unknown-tool error", h.Code, h.Message)
		}
		if _, err := os.Stat(src + ".moved"); err == nil {
			t.Error("the hidden move_file ran")
		}
	})

	t.Run("an unknown argument is forwarded with the rider", func(t *testing.T) {
		res := call(t, ctx, cs, "read_text_file", map[string]any{"path": filepath.Join(root, "workspace", "a.txt"), "linez": 3})
		if res.IsError {
			t.Fatalf("read failed: %s", text(res))
		}
		if !strings.Contains(text(res), "hello from the gate") || !strings.Contains(text(res), `{"_ignored_options":["linez"]}`) {
			t.Errorf("result text = %q; want the file and the rider", text(res))
		}
	})
}

func TestE2EFilesystemClosedSchemas(t *testing.T) {
	t.Parallel()
	fsServer := npmServer(t, "mcp-server-filesystem")
	root := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	open := toolNames(t, ctx, connect(t, ctx, newGate(t, "fs", fsConfig(root)).command(t, fsServer, root), nil))
	closed := toolNames(t, ctx, connect(t, ctx, newGate(t, "fs", fsConfig(root), "--publish-closed-schemas").command(t, fsServer, root), nil))
	schema := func(tool *mcp.Tool) map[string]any {
		b, _ := json.Marshal(tool.InputSchema)
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	if ap, ok := schema(open["write_file"])["additionalProperties"]; ok {
		t.Fatalf("the server's own write_file schema already says additionalProperties %v; the test needs one that does not", ap)
	}
	if ap := schema(closed["write_file"])["additionalProperties"]; ap != false {
		t.Errorf("published write_file schema additionalProperties = %v; want false", ap)
	}
	if len(open) != len(closed) {
		t.Errorf("%d tools open, %d closed", len(open), len(closed))
	}
}
