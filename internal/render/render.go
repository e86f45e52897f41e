package render

import (
	"errors"
	"fmt"

	"github.com/mcpx/mcpx-policy/internal/decision"
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
// An ask too large to show in full (ErrPromptTooLarge) is not asked: it
// renders as the deny of UnavailableFor. It fails for an unknown surface
// and when an ask's prompt cannot be built otherwise.
func Render(surface string, call decision.Call, d decision.Decision) (any, error) {
	d = Redact(d, call.Args)
	var p AskPrompt
	if d.Outcome == decision.Ask && surface != SurfaceDaemon {
		var err error
		if p, err = Prompt(call, d); errors.Is(err, ErrPromptTooLarge) {
			d = UnavailableFor(d, err)
		} else if err != nil {
			return nil, err
		}
	}
	ask := d.Outcome == decision.Ask
	switch surface {
	case SurfaceDaemon:
		if ask {
			s, b, err := DaemonAsk(call, d)
			if err != nil {
				return nil, err
			}
			return HTTPAnswer{Status: s, Body: b}, nil
		}
		s, b := Daemon(d)
		return HTTPAnswer{Status: s, Body: b}, nil
	case SurfaceMCP:
		if ask {
			return ElicitRequest{Method: "elicitation/create", Params: p.Elicitation()}, nil
		}
		return MCP(d), nil
	case SurfaceCLI:
		if ask {
			return p.Text(), nil
		}
		return CLI(d), nil
	default:
		return nil, fmt.Errorf("render: unknown surface %q (want daemon, mcp or cli)", surface)
	}
}
