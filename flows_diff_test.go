package mcpxpolicy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

// TestDiffConfigsLabelsPerTool: with a catalog, each tool's labels come
// from each config's policy — tool patterns, and open-world labels only
// on a tool whose openWorldHint is not false — and a label a tool gains
// tightens, one it loses loosens; a flow rule added tightens.
func TestDiffConfigsLabelsPerTool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	catalog := write("catalog.json", `{"servers": {"web": {"tools": [
	  {"name": "fetch", "annotations": {"readOnlyHint": true}},
	  {"name": "lookup", "annotations": {"readOnlyHint": true, "openWorldHint": false}}
	]}}}`)
	old := write("old.yaml", `version: 1
pool:
  labels:
    - {label: untrusted-input, tools: [fetch, lookup]}
`)
	new := write("new.yaml", `version: 1
pool:
  labels:
    - {label: untrusted-input, tools: [lookup]}
    - {label: egress, openWorld: true}
  flows:
    - {id: ask-egress, after: [untrusted-input], calls: [egress], then: ask}
`)
	d, err := mcpxpolicy.DiffConfigs(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{old}}, mcpxpolicy.Options{ConfigPaths: []string{new}, Catalog: catalog})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(d.Text, dir+"/", "")
	for _, want := range []string{
		"web.fetch\n  tightening  label \"egress\" added\n  loosening   label \"untrusted-input\" removed\n",
		"tightening  flow rule ask-egress added",
		"3 changes: 1 loosening, 2 tightening, 0 other",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the diff lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "web.lookup") {
		t.Errorf("lookup (openWorldHint false) gained or lost a label:\n%s", text)
	}
}
