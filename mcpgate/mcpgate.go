// Package mcpgate is what an MCP gateway built on the SDK answers and
// adds besides a decision's rendering (docs/proxy.md, docs/surfaces.md):
// the unknown-tool error a hidden tool gets, the answer for a write whose
// outcome was lost, the warn rider, and the pieces of an ask put to the
// person behind an MCP client (the elicitation form, the input_required
// result, reading the answer). The proxy of `mcpx-policy proxy` is built
// on it and on package mcpxpolicy alone.
//
// Every function is pure and safe for concurrent use.
package mcpgate

import (
	"encoding/json"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/render"
)

// ConfirmInputKey is the id of the gateway's confirmation among the
// inputRequests of an input_required result (InputRequired), and of its
// answer among the retry's inputResponses.
const ConfirmInputKey = render.InputRequestKey

// UnknownTool is exactly the JSON-RPC error the MCP Go SDK v1.8.0 server
// answers a tools/call for a tool it does not have: code -32602,
// `unknown tool "name"`. A hidden tool answers the same.
func UnknownTool(name string) (code int64, message string) {
	e := render.UnknownTool(name)
	return e.Code, e.Message
}

// UnknownOutcome is the tools/call answer (a CallToolResult, as JSON) for
// a write whose answer was lost (mcpxpolicy.Dispatch.Unknown): an error
// result saying it may or may not have run, that writes to server are
// blocked, the command that clears it (spelled by cmds) and not to retry;
// _meta["mcpx-policy/unknown_outcome"] holds the facts.
func UnknownOutcome(server, tool, ledgerID, cause string, cmds mcpxpolicy.Commands) json.RawMessage {
	b, _ := json.Marshal(render.UnknownOutcome(server, tool, ledgerID, cause, cmds.WritesClear(server, ledgerID, "")))
	return b
}

// IgnoredArgumentKeys returns the argument keys d's IgnoredArguments
// warnings name, in order and unredacted (a nested key by its JSON
// Pointer; keys counted but not listed as one last "…+N more"); nil when
// there are none. AddRider takes them and shows them redacted.
func IgnoredArgumentKeys(d decision.Decision) []string { return render.Ignored(d) }

// AddRider adds the warn rider naming the ignored argument keys to a
// successful tools/call result (its JSON as the server returned it): a
// text content item, _meta["mcpx-policy/ignored_options"] and, where the
// tool's outputSchema still validates, a key of structuredContent
// (docs/surfaces.md). An error result, an input_required result or an
// empty ignored list is returned unchanged; every other field is kept byte
// for byte. It fails only when result is not a JSON object.
func AddRider(result json.RawMessage, ignored []string, outputSchema json.RawMessage) (json.RawMessage, error) {
	return render.AddRider(result, ignored, outputSchema)
}

// ElicitationApproved reports whether an elicitation result approves the
// call: action "accept" with content {"approve": true}. Anything else is
// a "no": decline the approval request.
func ElicitationApproved(action string, content map[string]any) bool {
	return render.Approved(action, content)
}

// Elicitation is the elicitation/create params that put req's prompt to
// the person behind an MCP client: a form with one boolean, "approve",
// and the prompt's text as its message.
func Elicitation(req decision.ApprovalRequest) json.RawMessage {
	var p render.AskPrompt
	_ = json.Unmarshal(req.Prompt, &p)
	b, _ := json.Marshal(p.Elicitation())
	return b
}

// InputRequired is the input_required result that puts req's prompt to
// the person behind an MCP 2026-07-28 client: one input request,
// ConfirmInputKey, the Elicitation form; state is the requestState the
// client echoes in its retry.
func InputRequired(req decision.ApprovalRequest, state string) json.RawMessage {
	var p render.AskPrompt
	_ = json.Unmarshal(req.Prompt, &p)
	b, _ := json.Marshal(p.InputRequired(state))
	return b
}

// Declined turns an ask into the deny returned when the person said no
// (ConfirmationDeclined, the ask's reasons kept); any other decision is
// returned as it is.
func Declined(d decision.Decision) decision.Decision { return render.Declined(d) }

// Unavailable turns an ask into the deny a gateway returns when its client
// cannot ask the person (ConfirmationUnavailable, the ask's reasons kept),
// and when an ask could not be put on hold; it never turns an ask into an
// allow. Any other decision is returned as it is.
func Unavailable(d decision.Decision) decision.Decision { return render.Unavailable(d) }

// ErrPromptTooLarge is matched (errors.Is) by the error of an ask too
// large to show in full for confirmation (Engine.RequestApproval's): its
// prompt would pass render's limit, and a person approves only what they
// can read, so it is refused, never asked.
var ErrPromptTooLarge = render.ErrPromptTooLarge

// UnavailableFor is Unavailable for an ask that could not be put on hold
// because of err: for ErrPromptTooLarge the deny says the call is too
// large to show in full (details "refused", "bytes", "limit"); for any
// other err it is Unavailable(d), whose message names no internal error.
func UnavailableFor(d decision.Decision, err error) decision.Decision {
	return render.UnavailableFor(d, err)
}

// AddShadow returns the CallToolResult result with
// _meta["mcpx-policy/shadow"] holding the decision as it would be
// enforced, when shadow mode let its call through
// (decision.Decision.Relaxed); result unchanged otherwise. Only _meta
// changes: content and structuredContent are what the tool returned. It
// fails only when result or its _meta is not a JSON object.
func AddShadow(result json.RawMessage, shown mcpxpolicy.Redacted) (json.RawMessage, error) {
	return render.AddShadowShown(result, shown.Decision())
}

// URLElicitation is the elicitation/create params (MCP 2025-11-25,
// mode "url") that send the person behind an MCP client that declares
// URL elicitation to the approvals page, to answer there the ask held as
// held (the deny mcpxpolicy.Engine.DecideApproved with id "" returned
// for it).
// elicitationID is what the gateway's notifications/elicitation/complete
// names once the person answered. ok is false when held links no
// approvals page (mcpxpolicy.Options.ApprovalsPage).
func URLElicitation(held decision.Decision, elicitationID string) (params json.RawMessage, ok bool) {
	p, ok := render.HeldURLElicitation(held, elicitationID)
	if !ok {
		return nil, false
	}
	b, _ := json.Marshal(p)
	return b, true
}
