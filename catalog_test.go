package mcpxpolicy_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
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

func TestDecodeCall(t *testing.T) {
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
	call, _, err := eng.DecodeCall([]byte(`{"server":"fs","tool":{"name":"w"},"args":{"path":"/a","Path":"/b","n":1.0},"surface":"mcp"}`))
	if err != nil || call.Server != "fs" || call.Tool.Name != "w" || call.Args["Path"] != "/b" || call.Args["n"] != json.Number("1.0") || call.Surface != "mcp" {
		t.Fatalf("DecodeCall = %+v, %v", call, err)
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
		_, _, err := eng.DecodeCall([]byte(raw))
		var te *mcpxpolicy.ToolError
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeCall(%s) = %v; want an error with %q", raw, err, want)
		}
		if errors.As(err, &te) && !strings.Contains(raw, `"Name"`) {
			t.Errorf("DecodeCall(%s): a document error reported as a tool error", raw)
		}
	}
	call, _, err = eng.DecodeCall([]byte(`{"server":"fs","tool":"nosuch","args":{}}`))
	var te *mcpxpolicy.ToolError
	if !errors.As(err, &te) || call.Server != "fs" || call.Tool.Name != "nosuch" {
		t.Errorf("a tool name without a catalog: %+v, %v; want a *ToolError and the names for the deny", call, err)
	}
}
