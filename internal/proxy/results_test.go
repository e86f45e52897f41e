package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// closedOutput is an outputSchema that admits no key but "lines", as
// server-filesystem's tools declare theirs.
var closedOutput = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"lines": map[string]any{"type": "integer"}},
	"required":             []any{"lines"},
	"additionalProperties": false,
}

// validates checks a result as a client that validates structuredContent
// against the tool's outputSchema does (the TypeScript SDK: on every
// result that has structuredContent, error results included).
func validates(t *testing.T, schema any, res *mcp.CallToolResult) error {
	t.Helper()
	if res.StructuredContent == nil {
		return nil
	}
	b, _ := json.Marshal(schema)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("out.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("out.json")
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// TestResultsValidateAgainstOutputSchema: behind a tool whose outputSchema
// is closed, a refusal (an argument rule, unknown arguments, an ask the
// client cannot show) carries its text in content and its decision in
// _meta, and nothing in structuredContent; an allowed call with an ignored
// argument keeps the server's structuredContent as it was, the rider in
// content and _meta. Every result validates.
func TestResultsValidateAgainstOutputSchema(t *testing.T) {
	t.Parallel()
	const config = `version: 1
policy: {write: allow}
servers:
  s:
    unknownArgs: warn
    writePolicy: allow
    argumentRules:
      - id: short-paths
        tools: ["count"]
        schema: {properties: {path: {type: string, maxLength: 5}}}
`
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	handler := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"lines":3}`}},
			StructuredContent: map[string]any{"lines": 3}}, nil
	}
	input := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	srv.AddTool(&mcp.Tool{Name: "count", InputSchema: input, OutputSchema: closedOutput, Annotations: ro}, handler)
	r := newRig(t, config, proxy.Options{}, srv)
	ctx := context.Background()

	res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"path": "/a", "colour": "red"}})
	if err != nil || res.IsError {
		t.Fatalf("allowed call with an ignored argument: %v %v", res, err)
	}
	if err := validates(t, closedOutput, res); err != nil {
		t.Errorf("the allowed result does not validate against the outputSchema: %v", err)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"lines":3}` {
		t.Errorf("structuredContent = %s; want the server's, unchanged", sc)
	}
	if got := resultText(res); !strings.Contains(got, `{"_ignored_options":["colour"]}`) {
		t.Errorf("content %q lacks the rider", got)
	}
	if m, _ := json.Marshal(res.Meta); !strings.Contains(string(m), `"mcpx-policy/ignored_options":["colour"]`) {
		t.Errorf("_meta = %s; want the rider", m)
	}

	res, err = r.client.CallTool(ctx, &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"path": "/a/long/path"}})
	if err != nil || !res.IsError {
		t.Fatalf("rule violation: %v %v", res, err)
	}
	if res.StructuredContent != nil {
		t.Errorf("a refusal carries structuredContent %v", res.StructuredContent)
	}
	if !strings.Contains(resultText(res), "Refused: s.count was not executed") || !strings.Contains(resultText(res), "short-paths") {
		t.Errorf("refusal text %q", resultText(res))
	}
	d, _ := res.Meta["mcpx-policy/decision"].(map[string]any)
	if reasons, _ := d["reasons"].([]any); len(reasons) == 0 || reasons[0].(map[string]any)["code"] != "ArgumentRuleViolation" {
		t.Errorf("_meta decision = %v", res.Meta)
	}
}
