package mcpxpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcpx/mcpx-policy/internal/render"
)

// The surfaces a decision renders for: an HTTP daemon, an MCP client (the
// proxy) and a terminal. Call.Surface names one of them.
const (
	SurfaceDaemon = render.SurfaceDaemon
	SurfaceMCP    = render.SurfaceMCP
	SurfaceCLI    = render.SurfaceCLI
)

// KnownSurface reports whether s is SurfaceDaemon, SurfaceMCP or SurfaceCLI.
func KnownSurface(s string) bool {
	return s == SurfaceDaemon || s == SurfaceMCP || s == SurfaceCLI
}

// The renderings' value types (docs/surfaces.md shows each one).
type (
	// HTTPAnswer is the daemon rendering: an HTTP status and its JSON body
	// (the decision document for an allow, a *DaemonBody for a refusal).
	HTTPAnswer = render.HTTPAnswer
	// DaemonBody is the JSON body of a daemon refusal.
	DaemonBody = render.DaemonBody
	// MCPAnswer is the MCP rendering of a tools/call that is not an ask:
	// Error for a hidden tool, Result for any other refusal, neither for an
	// allow.
	MCPAnswer = render.MCPAnswer
	// ToolResult is an MCP CallToolResult with the fields a refusal uses.
	ToolResult = render.ToolResult
	// Content is an MCP text content item.
	Content = render.Content
	// RPCError is a JSON-RPC error object, field for field the MCP Go
	// SDK's jsonrpc.Error.
	RPCError = render.RPCError
	// ElicitRequest is the MCP elicitation/create request (without its
	// id) that puts an ask to the person behind the client.
	ElicitRequest = render.ElicitRequest
	// ElicitParams are the params of an elicitation/create request.
	ElicitParams = render.ElicitParams
	// PromptReason is one reason an ask needs confirmation.
	PromptReason = render.PromptReason
	// InputRequiredResult is the tools/call result by which an MCP
	// 2026-07-28 server asks its client for input.
	InputRequiredResult = render.InputRequiredResult
	// InputRequest is one input request of an InputRequiredResult.
	InputRequest = render.InputRequest
	// Commands spells the mcpx-policy commands an output tells a person to
	// run (clear a write, accept a pin, check the config) with the state
	// dir and config files of the process that prints them; the zero value
	// names neither.
	Commands = render.Commands
)

// Rendering is a decision as one surface shows it; Render makes it. The
// field of its surface is set: HTTP for the daemon; MCP for an MCP
// tools/call that is not an ask, or Elicit for an ask; Text for the CLI.
// Its JSON form is that field's (what `eval --format json` and serve's
// /v1/decide put in "rendered"); the zero Rendering is JSON null.
type Rendering struct {
	// Surface is the surface it renders for.
	Surface string
	// HTTP is the daemon's status and body.
	HTTP *HTTPAnswer
	// MCP is the tools/call answer (both fields nil for an allow).
	MCP *MCPAnswer
	// Elicit is the elicitation request the proxy sends for an ask.
	Elicit *ElicitRequest
	// Text is the terminal's text (for an ask, the prompt).
	Text string
}

// MarshalJSON is the JSON of the surface's field: {"status","body"} for the
// daemon, the CallToolResult, JSON-RPC error or null for MCP, the request
// for an elicitation, a JSON string for the CLI, null for the zero value.
func (r Rendering) MarshalJSON() ([]byte, error) {
	var v any
	switch {
	case r.HTTP != nil:
		v = r.HTTP
	case r.Elicit != nil:
		v = r.Elicit
	case r.MCP != nil:
		v = r.MCP
	case r.Surface == SurfaceCLI:
		v = r.Text
	default:
		return []byte("null"), nil
	}
	return marshalJSON(v)
}

// marshalJSON is json.Marshal without HTML escaping: the encoder that
// writes the whole document decides about that.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Render returns how surface shows call's decision d: for the daemon an
// HTTP status and JSON body, for MCP the CallToolResult (or, for a hidden
// tool, the unknown-tool JSON-RPC error; for an ask, the elicitation
// request), for the CLI the text. Values echoed from the arguments are
// redacted when secret-shaped and cut when long. It fails for an unknown
// surface and when an ask's prompt cannot be built. Pure; safe for
// concurrent use.
func Render(surface string, call Call, d Decision) (Rendering, error) {
	v, err := render.Render(surface, call, d)
	if err != nil {
		return Rendering{}, err
	}
	out := Rendering{Surface: surface}
	switch v := v.(type) {
	case render.HTTPAnswer:
		out.HTTP = &v
	case render.MCPAnswer:
		out.MCP = &v
	case render.ElicitRequest:
		out.Elicit = &v
	case string:
		out.Text = v
	default:
		return Rendering{}, fmt.Errorf("mcpxpolicy: render: unexpected %T", v)
	}
	return out, nil
}

// Redact returns d as every output shows it: secret-shaped keys in
// violation paths, secret values (by key name and by shape, anywhere in a
// string), and every secret of call's arguments echoed in a message
// (an override quoting args.password, say) replaced by a marker; long
// values cut after that. Render does it itself; a program that prints,
// logs or returns a decision any other way calls Redact first. Decide's
// decision is the policy's own document, what a stock OPA answers; only
// the in-process SDK sees it before Redact. Redacting twice changes
// nothing; d is not modified. See docs/surfaces.md.
func Redact(call Call, d Decision) Decision { return render.Redact(d, call.Args) }

// HTTPStatus is the HTTP status the daemon surface answers d with.
func HTTPStatus(d Decision) int { return render.StatusOf(d) }

// ConfirmationUnavailableDecision turns an ask into the deny a surface that cannot
// ask returns; it never turns an ask into an allow.
func ConfirmationUnavailableDecision(d Decision) Decision { return render.Unavailable(d) }

// ConfirmationUnavailableFor is ConfirmationUnavailableDecision for an ask
// that could not be put to a person because of err (RequestApproval's):
// for ErrPromptTooLarge the deny says the call is too large to show in
// full; for any other err it is ConfirmationUnavailableDecision(d).
func ConfirmationUnavailableFor(d Decision, err error) Decision { return render.UnavailableFor(d, err) }

// ConfirmationDeclinedDecision turns an ask into the deny returned when the
// person said no.
func ConfirmationDeclinedDecision(d Decision) Decision { return render.Declined(d) }
