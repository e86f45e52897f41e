package mcpxpolicy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

func TestParseToolIsStrict(t *testing.T) {
	t.Parallel()
	tool, err := mcpxpolicy.ParseTool([]byte(`{"name":"w","title":"T","annotations":{"readOnlyHint":false},"inputSchema":{"properties":{"n":{"maximum":12345678901234567890}}},"_meta":{}}`))
	if err != nil || tool.Name != "w" || *tool.Annotations.ReadOnlyHint {
		t.Fatalf("ParseTool = %+v, %v", tool, err)
	}
	if max := tool.InputSchema["properties"].(map[string]any)["n"].(map[string]any)["maximum"]; max != json.Number("12345678901234567890") {
		t.Errorf("maximum = %#v; want the number as written", max)
	}
	for raw, want := range map[string]string{
		`{"name":"w","annotations":{"readOnlyHint":"yes"}}`:                           `cannot unmarshal string`,
		`{"name":"w","annotations":{"readOnlyHint":false,"ReadOnlyHint":true}}`:       `key "ReadOnlyHint" is not "readOnlyHint"`,
		`{"name":"w","Name":"r"}`:                                                     `key "Name" is not "name"`,
		`{"name":"w","inputSchema":{"type":"object","type":"string"}}`:                `duplicate key "type"`,
		`{"name":"w"} {"name":"r"}`:                                                   `trailing data`,
		`{"name":"w","annotations":{"destructiveHint":false,"destructiveHint":true}}`: `duplicate key "destructiveHint"`,
	} {
		if _, err := mcpxpolicy.ParseTool([]byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTool(%s) = %v; want an error with %q", raw, err, want)
		}
	}
}

// TestAnswerReadsStrictly: Answer reads a call document strictly — exact
// key names, no duplicate, no unknown field, nothing after it — and keeps
// numbers as written; a document that does not read is an InvalidInput
// deny that says why, and only a tool that does not resolve gets the
// adapter's hint.
func TestAnswerReadsStrictly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	opts := mcpxpolicy.AnswerOptions{Name: "call document", ToolHint: "HINT"}
	ans := eng.Answer(ctx, []byte(`{"server":"fs","tool":{"name":"w"},"args":{"path":"/a","Path":"/b","n":1.0},"surface":"mcp"}`), opts)
	call := ans.Call
	if ans.Unread != nil || call.Server != "fs" || call.Tool.Name != "w" || call.Args["Path"] != "/b" || call.Args["n"] != json.Number("1.0") || call.Surface != "mcp" {
		t.Fatalf("Answer = %+v, %v", call, ans.Unread)
	}
	for raw, want := range map[string]string{
		`{"server":"fs","SERVER":"fs2","tool":"w","args":{}}`:        `key "SERVER" is not "server"`,
		`{"server":"fs","tool":{"name":"w"},"args":{},"Args":{}}`:    `key "Args" is not "args"`,
		`{"server":"fs","tool":{"name":"w"},"args":{"p":1,"p":2}}`:   `duplicate key "p" (at /args)`,
		`{"server":"fs","tool":{"name":"w"},"args":{},"argz":{}}`:    `unknown field "argz"`,
		`{"server":"fs","tool":{"name":"w"},"args":{}} []`:           `trailing data`,
		`{"server":"fs","tool":{"name":"w","Name":"r"},"args":{}}`:   `key "Name" is not "name"`,
		`{"server":"fs","tool":{"name":"w"},"principal":{"ID":"x"}}`: `key "ID" is not "id"`,
	} {
		ans := eng.Answer(ctx, []byte(raw), opts)
		err := ans.Unread
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "not a call document: ") {
			t.Errorf("Answer(%s): %v; want an error with %q", raw, err, want)
		}
		if d := ans.Decision.Decision(); d.Outcome != decision.Deny || d.First().Code != decision.InvalidInput || d.First().Message != err.Error() {
			t.Errorf("Answer(%s): %+v; want an InvalidInput deny saying why", raw, d)
		}
		if strings.Contains(err.Error(), "HINT") != strings.Contains(raw, `"Name"`) {
			t.Errorf("Answer(%s): %v: the tool's hint goes with a tool that does not read, and only there", raw, err)
		}
	}
	ans = eng.Answer(ctx, []byte(`{"server":"fs","tool":"nosuch","args":{}}`), opts)
	if err := ans.Unread; err == nil || !strings.HasSuffix(err.Error(), "is not in the catalog (HINT)") || ans.Call.Server != "fs" || ans.Call.Tool.Name != "nosuch" {
		t.Errorf("a tool name without a catalog: %+v, %v; want the hint and the names for the deny", ans.Call, err)
	}
	if d := ans.Decision.Decision(); d.Call.Server != "fs" || d.Call.Tool != "nosuch" {
		t.Errorf("the deny names %+v; want fs.nosuch", d.Call)
	}
}
