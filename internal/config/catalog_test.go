package config_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
)

const catalogJSON = `{"servers": {
  "fs": {"tools": [
    {"name": "write_file", "annotations": {"readOnlyHint": false, "destructiveHint": true},
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}},
    {"name": "read_file", "annotations": {"readOnlyHint": true},
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "move_file", "inputSchema": {"type": "object", "properties": {"source": {}, "destination": {}}}}
  ]},
  "git": {"tools": [
    {"name": "git_push", "inputSchema": {"type": "object", "properties": {
      "force": {"type": "boolean"},
      "options": {"type": "object", "properties": {"verbose": {"type": "boolean"}}}}}}
  ]}
}}`

const catalogConfig = `version: 1
pool:
  hiddenTools: ["*_debug", "read_*"]
  argumentRules:
    - id: pool-rule
      tools: [nowhere]
      schema: true
servers:
  fs:
    hiddenTools: ["delete_*"]
    writeTools: [read_file]
    argumentRules:
      - id: fs-writes-in-workspace
        tools: [write_file, edit_file, "/^move_/"]
        schema:
          properties:
            path: {type: string, pathWithin: [/workspace]}
  git:
    argumentRules:
      - id: no-force-push
        tools: [git_push]
        argument: force
        schema: {const: false}
      - id: no-force-opt
        tools: [git_push]
        argument: /options/force
        schema: {const: false}
  absent:
    hiddenTools: [anything]
`

func TestCatalogWarnings(t *testing.T) {
	t.Parallel()
	c, err, dir := load(t, map[string]string{"main.yaml": catalogConfig, "catalog.json": catalogJSON}, config.LoadOptions{Catalog: "catalog.json"})
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c, dir,
		`main.yaml:3: pool.hiddenTools[0]: tool pattern "*_debug" matches no tool of any server in the catalog`,
		`main.yaml:6: pool.argumentRules[0].tools[0]: rule "pool-rule": tool pattern "nowhere" matches no tool of any server in the catalog`,
		`main.yaml:10: servers.fs.hiddenTools[0]: tool pattern "delete_*" matches no tool of server fs in the catalog`,
		`main.yaml:14: servers.fs.argumentRules[0].tools[1]: rule "fs-writes-in-workspace": tool pattern "edit_file" matches no tool of server fs in the catalog`,
		`main.yaml:15: servers.fs.argumentRules[0].schema: rule "fs-writes-in-workspace": property "/path" is not declared by the inputSchema of fs.move_file`,
		`main.yaml:27: servers.git.argumentRules[1].schema: rule "no-force-opt": property "/options/force" is not declared by the inputSchema of git.git_push`,
	)
	if c.Catalog == nil {
		t.Fatal("Compiled.Catalog is nil")
	}
	// CheckCatalog re-runs on a changed tool list: with edit_file and a
	// path on move_file the fs warnings go away.
	cat, err := config.NewCatalog(map[string][]json.RawMessage{"fs": {
		json.RawMessage(`{"name": "write_file", "inputSchema": {"properties": {"path": {}}}}`),
		json.RawMessage(`{"name": "edit_file", "inputSchema": {"properties": {"path": {}}}}`),
		json.RawMessage(`{"name": "move_file", "inputSchema": {"properties": {"path": {}}}}`),
		json.RawMessage(`{"name": "delete_file"}`),
		json.RawMessage(`{"name": "x_debug"}`),
		json.RawMessage(`{"name": "read_file"}`),
		json.RawMessage(`{"name": "nowhere"}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if ws := config.CheckCatalog(c, cat); len(ws) != 0 {
		t.Errorf("warnings after the tool list changed: %v", ws)
	}
}

func TestCatalogLookup(t *testing.T) {
	t.Parallel()
	cat, err := config.ParseCatalog([]byte(catalogJSON))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cat.Servers(), ","); got != "fs,git" {
		t.Errorf("servers %s", got)
	}
	if got := strings.Join(cat.Tools("fs"), ","); got != "write_file,read_file,move_file" {
		t.Errorf("fs tools %s", got)
	}
	raw, ok := cat.Tool("fs", "read_file")
	if !ok {
		t.Fatal("read_file not found")
	}
	var tool decision.Tool
	if err := json.Unmarshal(raw, &tool); err != nil {
		t.Fatal(err)
	}
	if tool.Name != "read_file" || tool.Annotations == nil || tool.Annotations.ReadOnlyHint == nil || !*tool.Annotations.ReadOnlyHint || tool.InputSchema["type"] != "object" {
		t.Errorf("decoded tool %+v", tool)
	}
	if _, ok := cat.Tool("fs", "nope"); ok {
		t.Error("unknown tool found")
	}
	if _, ok := cat.Tool("nope", "read_file"); ok {
		t.Error("unknown server found")
	}
}

func TestCatalogErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, body, want string }{
		{"syntax", "{\"servers\": {\n  \"fs\": {\"tools\": [}\n}}", `catalog.json:2: invalid catalog JSON: invalid character '}' looking for beginning of value`},
		{"no name", `{"servers": {"fs": {"tools": [{"title": "x"}]}}}`, `catalog.json: servers.fs.tools[0]: tool has no name`},
		{"duplicate", `{"servers": {"fs": {"tools": [{"name": "a"}, {"name": "a"}]}}}`, `catalog.json: servers.fs.tools[1]: duplicate tool "a"`},
		{"unknown key", `{"servers": {}, "tools": []}`, `catalog.json: tools: unknown key (a catalog is {"servers": {"<name>": {"tools": [...]}}})`},
		{"no servers", `{}`, `catalog.json: catalog has no "servers" object`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err, dir := load(t, map[string]string{"main.yaml": "version: 1\n", "catalog.json": tc.body}, config.LoadOptions{Catalog: "catalog.json"})
			var ce *config.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a ConfigError", err)
			}
			if got := rel(dir, err.Error()); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
