// Command notesserver is an MCP server on the official Go SDK for the
// end-to-end tests of asks through the proxy: it speaks every protocol
// revision the SDK does (2026-07-28 included) and keeps notes in a file,
// so a test sees on disk which writes ran.
//
//	notesserver FILE
//
// Tools: "add_note" appends its text and a newline to FILE (a write);
// "read_notes" returns FILE (a read); "clear_notes" empties FILE after
// asking its own question first ("Delete every note?"): an input_required
// result for a 2026-07-28 client, an elicitation/create for an older one.
package main

import (
	"context"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type noteArgs struct {
	Text string `json:"text"`
}

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: notesserver FILE")
	}
	file := os.Args[1]
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "notesserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add_note", Description: "appends a note",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(false)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in noteArgs) (*mcp.CallToolResult, any, error) {
			f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, nil, err
			}
			defer f.Close()
			if _, err := f.WriteString(in.Text + "\n"); err != nil {
				return nil, nil, err
			}
			return text("added " + in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "read_notes", Description: "returns the notes",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(file)
			if err != nil && !os.IsNotExist(err) {
				return nil, nil, err
			}
			return text(string(b)), nil, nil
		})
	s.AddTool(&mcp.Tool{Name: "clear_notes", Description: "deletes every note, after asking",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			answer, ok := req.Params.InputResponses["sure"].(*mcp.ElicitResult)
			if !ok {
				return &mcp.CallToolResult{RequestState: "notesserver/clear", InputRequests: mcp.InputRequestMap{
					"sure": &mcp.ElicitParams{Message: "Delete every note?", RequestedSchema: map[string]any{"type": "object",
						"properties": map[string]any{"sure": map[string]any{"type": "boolean"}}, "required": []any{"sure"}}}}}, nil
			}
			if sure, _ := answer.Content["sure"].(bool); answer.Action != "accept" || !sure || req.Params.RequestState != "notesserver/clear" {
				return text("kept"), nil
			}
			if err := os.WriteFile(file, nil, 0o644); err != nil {
				return nil, err
			}
			return text("cleared"), nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
