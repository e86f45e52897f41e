// Command exitserver is an MCP server for the end-to-end tests of the
// proxy's ledger path: its write tool, "write_note", makes the process exit
// as soon as the request arrives, before any answer, as a crashing server
// would. "read_note" answers normally.
package main

import (
	"context"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type noteArgs struct {
	Text string `json:"text,omitempty"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "exitserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "write_note",
		Description: "exits the server process on arrival",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in noteArgs) (*mcp.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_note",
		Description: "answers",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(ctx context.Context, req *mcp.CallToolRequest, in noteArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "note"}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
