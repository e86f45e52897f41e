package mcpxpolicy

import (
	"encoding/json"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// CheckTools checks the current config against one server's live tool
// list — each tool exactly as the server's tools/list returned it — and
// returns the warnings, as "file:line: path: message": a rule or a hidden
// or write pattern of that server (or of the pool) that matches none of
// the tools, and a rule property a matched tool's inputSchema does not
// declare. A proxy calls it when it first lists the server's tools and
// again on notifications/tools/list_changed. It does not change the
// Engine. It fails when a tool is not an MCP Tool object (no name,
// duplicate name, inputSchema not an object). Safe for concurrent use.
func (e *Engine) CheckTools(server string, tools []json.RawMessage) ([]string, error) {
	cat, err := config.NewCatalog(map[string][]json.RawMessage{server: tools})
	if err != nil {
		return nil, err
	}
	ws := config.CheckCatalog(e.cur.Load().compiled, cat)
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.String()
	}
	return out, nil
}
