package mcpxpolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

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

// CallDocument is one call as JSON: the call file of `mcpx-policy eval` and
// the body of serve's POST /v1/decide. Tool is an MCP Tool object, or a
// tool name looked up in the Engine's catalog (ResolveTool).
type CallDocument struct {
	Server    string          `json:"server"`
	Tool      json.RawMessage `json:"tool"`
	Args      map[string]any  `json:"args"`
	Surface   string          `json:"surface,omitempty"`
	Principal *Principal      `json:"principal,omitempty"`
	Mode      string          `json:"mode,omitempty"`
}

// Call is the document's call without its tool, which ResolveTool reads.
func (d CallDocument) Call() Call {
	return Call{Server: d.Server, Args: d.Args, Surface: d.Surface, Principal: d.Principal, Mode: d.Mode}
}

// ResolveTool reads the "tool" of a call document: an MCP Tool object, or a
// tool name looked up in the Engine's catalog (Options.Catalog). The error
// says which of the three went wrong: missing, not in the catalog, or
// neither a name nor a Tool.
func (e *Engine) ResolveTool(server string, raw json.RawMessage) (Tool, error) {
	var name string
	switch {
	case len(raw) == 0:
		return Tool{}, errors.New(`"tool" is missing`)
	case json.Unmarshal(raw, &name) == nil:
		t, ok := e.ToolFromCatalog(server, name)
		if !ok {
			return Tool{Name: name}, fmt.Errorf("tool %q of server %q is not in the catalog", name, server)
		}
		return t, nil
	default:
		t, err := ParseTool(raw)
		if err != nil {
			return Tool{}, fmt.Errorf(`"tool" is neither a name nor an MCP Tool: %w`, err)
		}
		return t, nil
	}
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
