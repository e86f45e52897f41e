package mcpxpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
)

// ParseTool reads an MCP Tool from JSON strictly (docs/proxy.md, "Strict
// decoding"): a duplicate key anywhere, a key that differs from "name",
// "description", "annotations", "inputSchema", "outputSchema" or a hint's
// name only by case, a hint that is not a boolean, invalid UTF-8 or
// trailing data is an error; so is a description that is not a string or
// an outputSchema that is not an object (a pinned definition covers both:
// decision.ToolSHA256). Fields the policy does not read (title, _meta…)
// pass. Numbers in the inputSchema stay exact (json.Number).
func ParseTool(raw []byte) (decision.Tool, error) {
	var t decision.Tool
	err := strictjson.Unmarshal(raw, &t)
	return t, err
}

// catalogTool is the tool of cat by server and name, when it reads.
func catalogTool(cat *config.Catalog, server, name string) (decision.Tool, bool) {
	raw, ok := cat.Tool(server, name)
	if !ok {
		return decision.Tool{}, false
	}
	t, err := ParseTool(raw)
	return t, err == nil
}

// resolveTool reads the "tool" of a call document: an MCP Tool object, or a
// tool name looked up in the Engine's catalog (Options.Catalog). The error
// says which of the three went wrong: missing, not in the catalog, or
// neither a name nor a Tool.
func (e *Engine) resolveTool(server string, raw json.RawMessage) (decision.Tool, error) {
	var name string
	switch {
	case len(raw) == 0:
		return decision.Tool{}, errors.New(`"tool" is missing`)
	case json.Unmarshal(raw, &name) == nil:
		cat := e.cur.Load().compiled.Catalog
		if cat != nil {
			if t, ok := catalogTool(cat, server, name); ok {
				return t, nil
			}
		}
		return decision.Tool{Name: name}, fmt.Errorf("tool %q of server %q is not in the catalog", name, server)
	default:
		t, err := ParseTool(raw)
		if err != nil {
			return decision.Tool{}, fmt.Errorf(`"tool" is neither a name nor an MCP Tool: %w`, err)
		}
		return t, nil
	}
}

// catalogWarnings are the warnings of a catalog that names servers the
// config does not configure, one per server, prefixed with the catalog
// file.
func catalogWarnings(c *config.Compiled, catalogPath string) []string {
	if c.Catalog == nil {
		return nil
	}
	configured := configuredServers(c)
	var out []string
	for _, s := range c.Catalog.Servers() {
		if !slices.Contains(configured, s) {
			out = append(out, catalogPath+": "+UnconfiguredWarning(s, configured))
		}
	}
	return out
}

// ArgumentRule is one argument rule that applies to a tool, as the config
// wrote it: what `proxy --publish-rules` adds to the tool's inputSchema.
type ArgumentRule struct {
	// ID and Description name the rule, Origin is its file:line.
	ID, Description string
	Origin          string
	// Argument is the key path of a per-argument rule (a name, or a JSON
	// Pointer's unescaped tokens); nil for a rule on the whole arguments.
	Argument []string
	// Required: the argument must be present.
	Required bool
	// Schema is the rule's JSON Schema (JSON values, numbers as
	// json.Number). It is shared: copy it before changing it.
	Schema any
}

// ArgumentRules lists the argument rules of the current config that apply
// to tool on server (the pool's and the server's). Safe for concurrent
// use.
func (e *Engine) ArgumentRules(server, tool string) []ArgumentRule {
	rs := e.cur.Load().compiled.RulesFor(server, tool)
	out := make([]ArgumentRule, len(rs))
	for i, r := range rs {
		out[i] = ArgumentRule(r)
	}
	return out
}

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
