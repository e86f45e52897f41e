package mcpxpolicy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

func TestCheckTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	config := `version: 1
servers:
  fs:
    hiddenTools: ["move_*"]
    argumentRules:
      - id: ws
        tools: ["write_file"]
        schema: {properties: {path: {type: string}, mode: {type: string}}}
`
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	tools := func(list ...string) []json.RawMessage {
		var out []json.RawMessage
		for _, s := range list {
			out = append(out, json.RawMessage(s))
		}
		return out
	}
	read := `{"name":"read_file","inputSchema":{"type":"object","properties":{"path":{}}}}`
	write := `{"name":"write_file","inputSchema":{"type":"object","properties":{"path":{},"content":{}}}}`
	move := `{"name":"move_file","inputSchema":{"type":"object"}}`

	ws, err := eng.CheckTools("fs", tools(read))
	if err != nil {
		t.Fatal(err)
	}
	if joined := strings.Join(ws, "\n"); len(ws) != 2 || !strings.Contains(joined, `"write_file"`) || !strings.Contains(joined, `"move_*"`) {
		t.Errorf("without write_file and move_file: %q; want the rule's and the hidden pattern's dead patterns", ws)
	}
	ws, err = eng.CheckTools("fs", tools(read, write, move))
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || !strings.Contains(ws[0], "mode") {
		t.Errorf("with every tool: %q; want only the undeclared property mode", ws)
	}
	if _, err := eng.CheckTools("fs", tools(`{"inputSchema":{}}`)); err == nil {
		t.Error("a tool without a name was accepted")
	}
	if ws, err := eng.CheckTools("other", tools(read)); err != nil || len(ws) != 0 {
		t.Errorf("a server the config does not name: %q, %v", ws, err)
	}
}
