package mcpxpolicy

import (
	"bytes"
	"encoding/json"

	"github.com/mcpx/mcpx-policy/internal/bundle"
)

func catalogTool(cat *bundle.Catalog, server, name string) (Tool, bool) {
	raw, ok := cat.Tool(server, name)
	if !ok {
		return Tool{}, false
	}
	t, err := ParseTool(raw)
	return t, err == nil
}

// ParseTool reads an MCP Tool from JSON, keeping numbers in its inputSchema
// exact.
func ParseTool(raw []byte) (Tool, error) {
	var t Tool
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	err := dec.Decode(&t)
	return t, err
}
