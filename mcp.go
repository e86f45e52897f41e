package mcpxpolicy

import (
	"encoding/json"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/render"
)

// What an MCP proxy answers and adds (docs/proxy.md, docs/surfaces.md).

// ConfirmInputKey is the id of the proxy's confirmation among the
// inputRequests of an input_required result (AskPrompt.InputRequired), and
// of its answer among the retry's inputResponses.
const ConfirmInputKey = render.InputRequestKey

// RenderMCP is the tools/call answer to a refusal, with the commands its
// text names spelled by cmds so that they run as printed. A hidden tool
// answers exactly as an unknown tool does (MCPAnswer.Error, UnknownTool);
// any other refusal is an isError CallToolResult with the redacted
// decision in _meta["mcpx-policy/decision"]; an ask renders as
// ConfirmationUnavailableDecision; an allow is the zero MCPAnswer.
func RenderMCP(d decision.Decision, cmds Commands) MCPAnswer { return render.MCPFor(d, cmds) }

// UnknownTool is exactly the JSON-RPC error the MCP Go SDK v1.8.0 server
// answers a tools/call for a tool it does not have: code -32602,
// `unknown tool "name"`.
func UnknownTool(name string) *RPCError { return render.UnknownTool(name) }

// UnknownOutcomeResult is the tools/call answer for a write whose answer
// was lost (Dispatch.Unknown): an error result saying it may or may not
// have run, that writes to server are blocked, the clear command (spelled
// by cmds) and not to retry; _meta["mcpx-policy/unknown_outcome"] holds
// the facts.
func UnknownOutcomeResult(server, tool, ledgerID, cause string, cmds Commands) ToolResult {
	return render.UnknownOutcome(server, tool, ledgerID, cause, cmds)
}

// IgnoredArgumentKeys returns the argument keys d's IgnoredArguments warnings
// name, in order and unredacted (a nested key by its JSON Pointer; keys
// counted but not listed as one last "…+N more"); nil when there are none.
// AddRider takes them.
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

// AddShadow returns the CallToolResult result with
// _meta["mcpx-policy/shadow"] holding the redacted decision as it would be
// enforced, when shadow mode let d's call through (Decision.Relaxed);
// result unchanged otherwise. Only _meta changes. It fails only when
// result or its _meta is not a JSON object.
func AddShadow(result json.RawMessage, d decision.Decision) (json.RawMessage, error) {
	return render.AddShadow(result, d)
}

// ElicitationApproved reports whether an elicitation result approves the
// call: action "accept" with content {"approve": true}. Anything else is
// a "no": render it with ConfirmationDeclinedDecision.
func ElicitationApproved(action string, content map[string]any) bool {
	return render.Approved(action, content)
}
