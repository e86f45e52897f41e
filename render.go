package mcpxpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/render"
)

// The surfaces a decision renders for: an HTTP daemon, an MCP client (the
// proxy) and a terminal. Call.Surface names one of them.
const (
	SurfaceDaemon = render.SurfaceDaemon
	SurfaceMCP    = render.SurfaceMCP
	SurfaceCLI    = render.SurfaceCLI
)

// knownSurface reports whether s is SurfaceDaemon, SurfaceMCP or SurfaceCLI.
func knownSurface(s string) bool {
	return s == SurfaceDaemon || s == SurfaceMCP || s == SurfaceCLI
}

// Redacted is a decision made fit to show: what every output shows of
// one — a rendering, an Answer, a decision log line, a recorded call.
// Only Redact makes one, so whatever takes a Redacted cannot be handed a
// decision nobody redacted, and does not redact it again. The zero value
// holds the zero decision.
type Redacted struct{ r redact.Decision }

// Redact returns d as every output shows it: secret-shaped keys in
// violation paths, secret values (by key name and by shape, anywhere in a
// string), and every secret of call's arguments echoed in a message (an
// override quoting args.password, say) replaced by a marker; long values
// cut after that. Decide's decision is the policy's own document, what a
// stock OPA answers: only the in-process SDK sees it before Redact; a
// program that prints, logs or returns a decision redacts it first. See
// docs/surfaces.md. Pure; safe for concurrent use.
func Redact(call decision.Call, d decision.Decision) Redacted {
	return Redacted{r: redact.Of(d, call.Args)}
}

// Decision returns the redacted decision document. Its slices and maps are
// shared with r: copy what you change.
func (r Redacted) Decision() decision.Decision { return r.r.Doc() }

// Rendering is a decision as one surface shows it; Render makes it. Its
// JSON form (what an Answer puts in "rendered") is {"status", "body"} for
// the daemon, Body for MCP (null for an allow) and Text as a JSON string
// for the CLI; the zero Rendering is JSON null.
type Rendering struct {
	// Surface is the surface it renders for.
	Surface string
	// Status is the daemon's HTTP status (docs/surfaces.md has the
	// table); 0 on the other surfaces.
	Status int
	// Body is the JSON the surface answers with: the daemon's body (the
	// decision document for an allow, the refusal's body else), for MCP
	// the CallToolResult of a refusal, the JSON-RPC error of a hidden
	// tool (an unknown tool's, field for field) or, for an ask, the
	// elicitation/create request the proxy would send; nil for an MCP
	// allow and on the CLI.
	Body json.RawMessage
	// Text is the terminal's text (for an ask, the prompt); "" on the
	// other surfaces.
	Text string
}

// MarshalJSON is the rendering's JSON form.
func (r Rendering) MarshalJSON() ([]byte, error) {
	switch {
	case r.Surface == SurfaceDaemon && r.Body != nil:
		return []byte(`{"status":` + strconv.Itoa(r.Status) + `,"body":` + string(r.Body) + `}`), nil
	case r.Surface == SurfaceMCP && r.Body != nil:
		return r.Body, nil
	case r.Surface == SurfaceCLI:
		return marshalJSON(r.Text)
	}
	return []byte("null"), nil
}

// Render returns how surface shows call's redacted decision r: for the
// daemon an HTTP status and JSON body, for MCP the CallToolResult (or, for
// a hidden tool, the unknown-tool JSON-RPC error; for an ask, the
// elicitation request), for the CLI the text. Values echoed from the
// arguments are redacted already (Redact) and cut when long. An ask too
// large to show in full (its prompt would pass render.MaxShownBytes) is
// not asked: it renders as the ConfirmationUnavailable deny that says so
// (mcpgate.UnavailableFor). It fails for an unknown surface and when an
// ask's prompt cannot be built otherwise. Pure; safe for concurrent use.
func Render(surface string, call decision.Call, r Redacted) (Rendering, error) {
	return renderPrompted(surface, call, r, nil)
}

// renderPrompted is Render with r's prompt built already (nil: built
// here when r is an ask).
func renderPrompted(surface string, call decision.Call, r Redacted, prompt *render.AskPrompt) (Rendering, error) {
	v, err := render.RenderPrompted(surface, call, r.r, prompt)
	if errors.Is(err, render.ErrPromptTooLarge) {
		// Answer refuses such an ask before it renders; a caller that
		// renders one itself gets the same refusal.
		v, err = render.Render(surface, call, redact.Of(render.UnavailableFor(r.r.Doc(), err), call.Args))
	}
	if err != nil {
		return Rendering{}, err
	}
	out := Rendering{Surface: surface}
	switch v := v.(type) {
	case render.HTTPAnswer:
		out.Status = v.Status
		out.Body, err = marshalJSON(v.Body)
	case render.MCPAnswer:
		if v.Error != nil || v.Result != nil {
			out.Body, err = marshalJSON(v)
		}
	case render.ElicitRequest:
		out.Body, err = marshalJSON(v)
	case string:
		out.Text = v
	default:
		return Rendering{}, fmt.Errorf("mcpxpolicy: render: unexpected %T", v)
	}
	if err != nil {
		return Rendering{}, fmt.Errorf("mcpxpolicy: render: %w", err)
	}
	return out, nil
}

// renderAnswer is Render for an Answer: for an ask put on hold as held,
// the daemon's 428 body carries the request under "approval" (without its
// prompt: the body's "ask" is that prompt), so whoever receives the 428
// knows which request to have approved; held out of band (how, not nil),
// its error and details are the held refusal's (render.Held): how a
// person approves it, and that the same call sent again then runs once.
// The other surfaces render as Render does.
//
// prompt is r's prompt when the answer built it (nil: built here).
func renderAnswer(call decision.Call, r Redacted, held *decision.ApprovalRequest, how *render.Hold, prompt *render.AskPrompt) (Rendering, error) {
	if held == nil || call.Surface != SurfaceDaemon || r.Decision().Outcome != decision.Ask {
		return renderPrompted(call.Surface, call, r, prompt)
	}
	v, err := render.RenderPrompted(call.Surface, call, r.r, prompt)
	if err != nil {
		return Rendering{}, err
	}
	ans, ok := v.(render.HTTPAnswer)
	body, isBody := ans.Body.(*render.DaemonBody)
	if !ok || !isBody {
		return Render(call.Surface, call, r)
	}
	if how != nil {
		// The held refusal's words are the process's own (the request's
		// id, sha256 and expiry, a command, a link): the redacted
		// decision's reasons are kept as they are.
		h := render.Held(r.Decision(), *how)
		first := h.First()
		body.Error, body.Details = first.Message, first.Details
		body.Reasons = append([]decision.Reason{first}, body.Reasons[1:]...)
	}
	req := *held
	req.Prompt = nil
	b, err := marshalJSON(struct {
		*render.DaemonBody
		Approval decision.ApprovalRequest `json:"approval"`
	}{body, req})
	if err != nil {
		return Rendering{}, fmt.Errorf("mcpxpolicy: render: %w", err)
	}
	return Rendering{Surface: call.Surface, Status: ans.Status, Body: b}, nil
}
