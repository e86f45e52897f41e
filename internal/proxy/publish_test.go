package proxy

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

const publishTool = `{"name":"write_file","description":"Writes a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"where"},"content":{"type":"string"},"options":{"type":"object","properties":{"mode":{"type":"string"}}}},"required":["path"]},"annotations":{"readOnlyHint":false}}`

func schemaOf(t *testing.T, raw string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// validator compiles the inputSchema of a published tool as a validating
// client would.
func validator(t *testing.T, tool json.RawMessage) *jsonschema.Schema {
	t.Helper()
	var doc struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(tool, &doc); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("input.json", schemaOf(t, string(doc.InputSchema))); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("input.json")
	if err != nil {
		t.Fatalf("the published inputSchema does not compile: %v\n%s", err, doc.InputSchema)
	}
	return s
}

// TestPublishRules: each kind of rule is placed where it belongs, and the
// published schema refuses exactly what the rule refuses among the
// arguments tried; rules that cannot be placed exactly are left out with
// the reason; every other field of the tool is kept.
func TestPublishRules(t *testing.T) {
	t.Parallel()
	rules := []mcpxpolicy.ArgumentRule{
		{ID: "in-workspace", Description: "writes stay in the workspace", Argument: []string{"path"},
			Schema: map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string", "pattern": "^/workspace/"}},
		{ID: "small", Schema: map[string]any{"properties": map[string]any{"content": map[string]any{"maxLength": json.Number("10")}}}},
		{ID: "mode-known", Argument: []string{"options", "mode"}, Schema: map[string]any{"enum": []any{"a", "b"}}},
		{ID: "undeclared-needed", Argument: []string{"owner"}, Required: true, Schema: map[string]any{"const": "me"}},
		{ID: "through-array", Argument: []string{"items", "0", "name"}, Schema: map[string]any{"type": "string"}},
		{ID: "with-ref", Schema: map[string]any{"$defs": map[string]any{"p": map[string]any{"type": "string"}}, "properties": map[string]any{"path": map[string]any{"$ref": "#/$defs/p"}}}},
	}
	out, left, err := publishRules(json.RawMessage(publishTool), rules)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 || left[0].rule != "through-array" || !strings.Contains(left[0].why, `may go through an array (token "0")`) ||
		left[1].rule != "with-ref" || !strings.Contains(left[1].why, "$ref") {
		t.Fatalf("left out: %+v", left)
	}
	var tool map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&tool); err != nil {
		t.Fatal(err)
	}
	if tool["description"] != "Writes a file." || tool["annotations"].(map[string]any)["readOnlyHint"] != false {
		t.Errorf("other fields changed: %s", out)
	}
	in := tool["inputSchema"].(map[string]any)
	path := in["properties"].(map[string]any)["path"].(map[string]any)
	if path["type"] != "string" || path["description"] != "where" {
		t.Errorf("the property's own schema was not kept: %v", path)
	}
	placed, _ := json.Marshal(path["allOf"])
	if want := `[{"allOf":[{"pattern":"^/workspace/","type":"string"}],"description":"mcpx-policy rule in-workspace: writes stay in the workspace"}]`; string(placed) != want {
		t.Errorf("path's allOf = %s; want %s", placed, want)
	}
	s := validator(t, out)
	for _, c := range []struct {
		args  string
		valid bool
	}{
		{`{"path":"/workspace/a","content":"hi","owner":"me"}`, true},
		{`{"path":"/etc/passwd","content":"hi","owner":"me"}`, false},
		{`{"path":"/workspace/a","content":"far too long","owner":"me"}`, false},
		{`{"path":"/workspace/a","options":{"mode":"c"},"owner":"me"}`, false},
		{`{"path":"/workspace/a","options":{"mode":"a"},"owner":"me"}`, true},
		{`{"path":"/workspace/a"}`, false},
		{`{"path":"/workspace/a","owner":"you"}`, false},
	} {
		err := s.Validate(schemaOf(t, c.args))
		if (err == nil) != c.valid {
			t.Errorf("%s: valid=%v, want %v (%v)", c.args, err == nil, c.valid, err)
		}
	}

	// Nothing to place: the tool is returned byte for byte.
	same, left, err := publishRules(json.RawMessage(publishTool), rules[4:])
	if err != nil || string(same) != publishTool || len(left) != 2 {
		t.Errorf("only unplaceable rules: %s %v %v", same, left, err)
	}
}
