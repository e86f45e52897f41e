package render

import (
	"fmt"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
)

// The surfaces Render knows.
const (
	SurfaceDaemon = "daemon"
	SurfaceMCP    = "mcp"
	SurfaceCLI    = "cli"
)

// ElicitRequest is an MCP `elicitation/create` request without its id, as
// `eval --surface mcp` shows an ask.
type ElicitRequest struct {
	Method string       `json:"method"`
	Params ElicitParams `json:"params"`
}

// Render returns what `eval --surface S --format json` puts in "rendered"
// (docs/surfaces.md) for call and its decision d:
//   - daemon: HTTPAnswer{status, body} (Daemon; DaemonAsk for an ask);
//   - mcp: MCPAnswer (the CallToolResult, or the unknown-tool JSON-RPC error
//     for a hidden tool, or null for an allow); for an ask the
//     ElicitRequest the proxy would send;
//   - cli: the CLI text; for an ask the prompt's Text.
//
// It fails for an unknown surface and when an ask's prompt cannot be built.
// r is redacted already (redact.Of with call's arguments): nothing here
// redacts again.
func Render(surface string, call decision.Call, r redact.Decision) (any, error) {
	return RenderPrompted(surface, call, r, nil)
}

// RenderPrompted is Render with the ask's prompt built already (p, the
// result of Prompt(call, r)): an answer builds an ask's prompt once, to
// check its size, hold it and render it. p nil is Render.
func RenderPrompted(surface string, call decision.Call, r redact.Decision, p *AskPrompt) (any, error) {
	ask := r.Doc().Outcome == decision.Ask
	prompt := func() (AskPrompt, error) {
		if p != nil {
			return *p, nil
		}
		return Prompt(call, r)
	}
	switch surface {
	case SurfaceDaemon:
		if ask {
			s, b, err := daemonAsk(r, prompt)
			if err != nil {
				return nil, err
			}
			return HTTPAnswer{Status: s, Body: b}, nil
		}
		s, b := Daemon(r)
		return HTTPAnswer{Status: s, Body: b}, nil
	case SurfaceMCP:
		if ask {
			p, err := prompt()
			if err != nil {
				return nil, err
			}
			return ElicitRequest{Method: "elicitation/create", Params: p.Elicitation()}, nil
		}
		return MCP(r), nil
	case SurfaceCLI:
		if ask {
			p, err := prompt()
			if err != nil {
				return nil, err
			}
			return p.Text(), nil
		}
		return CLI(r), nil
	default:
		return nil, fmt.Errorf("render: unknown surface %q (want daemon, mcp or cli)", surface)
	}
}
