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

// TestDiffConfigsPerTool: with a catalog, every tool's facts come from
// each config's policy: hidden, write (annotations and writeTools), the
// write mode only where the tool is a write, the unknown-arguments mode,
// exempt keys and the rules that apply. A tool hidden under either config
// reports only that.
func TestDiffConfigsPerTool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	catalog := write("catalog.json", `{"servers": {"fs": {"tools": [
	  {"name": "read_file", "annotations": {"readOnlyHint": true}, "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
	  {"name": "write_file", "annotations": {"readOnlyHint": false}, "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
	  {"name": "move_file", "annotations": {"readOnlyHint": false}},
	  {"name": "delete_file", "annotations": {"readOnlyHint": false}}
	]}}}`)
	old := write("old.yaml", `version: 1
servers:
  fs:
    writePolicy: ask
    hiddenTools: [move_file, delete_file]
    argumentRules:
      - id: ws
        tools: [write_file]
        schema: {properties: {path: {pattern: "^/workspace/"}}}
`)
	new := write("new.yaml", `version: 1
servers:
  fs:
    writePolicy: allow
    unknownArgs: off
    hiddenTools: [delete_file]
    writeTools: [read_file]
    argumentRules:
      - id: ws-strict
        tools: [write_file, move_file]
        schema: {properties: {path: {pattern: "^/workspace/src/"}}}
`)
	d, err := mcpxpolicy.DiffConfigs(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{old}}, mcpxpolicy.Options{ConfigPaths: []string{new}, Catalog: catalog})
	if err != nil {
		t.Fatal(err)
	}
	if d.Loosening != 5 || d.Tightening != 2 || d.Other != 0 {
		t.Errorf("counts %d %d %d; want 5 loosening, 2 tightening", d.Loosening, d.Tightening, d.Other)
	}
	text := strings.ReplaceAll(d.Text, dir+"/", "")
	want := `compared old.yaml -> new.yaml over the 4 tools of the catalog catalog.json
fs.move_file
  loosening   hidden -> visible; now a write (write mode allow), unknown arguments off, rules ws-strict
fs.read_file
  tightening  a read -> a write (write mode allow)
  loosening   unknown arguments warn -> off
fs.write_file
  loosening   write mode ask -> allow
  loosening   unknown arguments warn -> off
  loosening   rule ws (old.yaml:7) no longer applies
  tightening  rule ws-strict (new.yaml:9) now applies
7 changes: 5 loosening, 2 tightening, 0 other
`
	if text != want {
		t.Errorf("text:\n%s\nwant:\n%s", text, want)
	}
	// The same changes as JSON, with what a newly visible tool now gets.
	b := d.JSON
	var doc struct {
		Catalog   bool `json:"catalog"`
		Tools     int  `json:"tools"`
		Changed   bool `json:"changed"`
		Loosening int  `json:"loosening"`
		Changes   []struct {
			Server, Tool, Field, Item, Direction string
			Old, New                             any
			Facts                                *struct {
				Write     bool   `json:"write"`
				WriteMode string `json:"writeMode"`
			}
		} `json:"changes"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Catalog || doc.Tools != 4 || !doc.Changed || doc.Loosening != 5 || len(doc.Changes) != 7 {
		t.Fatalf("JSON: %s", b)
	}
	first := doc.Changes[0]
	if first.Tool != "move_file" || first.Field != "hidden" || first.Old != true || first.New != false || first.Facts == nil || !first.Facts.Write || first.Facts.WriteMode != "allow" {
		t.Errorf("first change %+v", first)
	}

	// A config against itself: no change.
	same, err := mcpxpolicy.DiffConfigs(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{old}}, mcpxpolicy.Options{ConfigPaths: []string{old}, Catalog: catalog})
	if err != nil || same.Loosening+same.Tightening+same.Other != 0 {
		t.Errorf("a config against itself: %v, %s", err, same.Text)
	}
}
