package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
)

// CodeInvalidParams is the JSON-RPC error code the MCP Go SDK v1.8.0 server
// answers a tools/call for an unknown tool with (jsonrpc.CodeInvalidParams).
const CodeInvalidParams int64 = -32602

// RPCError is a JSON-RPC error object, field for field the SDK's
// jsonrpc.Error (code, message, data omitted when empty). A proxy built on
// the SDK returns &jsonrpc.Error{Code: e.Code, Message: e.Message} from its
// handler.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the message, as the SDK's jsonrpc.Error does.
func (e *RPCError) Error() string { return e.Message }

// UnknownTool is exactly the error the MCP Go SDK v1.8.0 server returns for
// a tools/call naming a tool it does not have (mcp/server.go, callTool):
// code -32602, message fmt.Sprintf("unknown tool %q", name).
func UnknownTool(name string) *RPCError {
	return &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// Content is an MCP text content item as the SDK puts it on the wire.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// MetaDecision is the `_meta` key of a refusal's CallToolResult that holds
// the redacted decision document.
const MetaDecision = "mcpx-policy/decision"

// MetaUnknownOutcome is the `_meta` key of the result of a write whose
// outcome was lost (UnknownOutcome).
const MetaUnknownOutcome = "mcpx-policy/unknown_outcome"

// ToolResult is an MCP CallToolResult with the fields a refusal uses, under
// the SDK's wire names. It has no structuredContent: a client validates
// that against the tool's outputSchema (the TypeScript SDK does, on error
// results too), and a refusal is not the tool's output. What a program
// reads is in _meta.
type ToolResult struct {
	Content []Content      `json:"content"`
	IsError bool           `json:"isError,omitempty"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// MCPAnswer is the MCP rendering of a decision. For a refusal exactly one
// of Result and Error is set: Error for a hidden tool (the JSON-RPC error of
// an unknown tool), Result otherwise. For an allow both are nil: the call
// passes through (its result gets AddRider when d has IgnoredArguments).
type MCPAnswer struct {
	Result *ToolResult
	Error  *RPCError
}

// MarshalJSON is the JSON form `eval --format json` puts in "rendered": the
// JSON-RPC error object {"code","message"} for a hidden tool, the
// CallToolResult for any other refusal, and null for an allow.
func (a MCPAnswer) MarshalJSON() ([]byte, error) {
	switch {
	case a.Error != nil:
		return json.Marshal(a.Error)
	case a.Result != nil:
		return json.Marshal(a.Result)
	default:
		return []byte("null"), nil
	}
}

// MCP renders r for an MCP client. A hidden tool answers exactly as an
// unknown tool does (UnknownTool). Any other refusal is a CallToolResult
// with isError true, one text content a model can act on — what was
// refused, why, what would be accepted — and the redacted decision
// document in _meta["mcpx-policy/decision"]; never structuredContent,
// which clients validate against the tool's outputSchema. The commands it
// names are the decision's own, spelled by the process that decided. An
// ask is rendered as Unavailable: the proxy asks when the client can
// answer, and answers MCP only when it cannot.
func MCP(r redact.Decision) MCPAnswer {
	d := r.Doc()
	if d.Outcome == decision.Allow {
		return MCPAnswer{}
	}
	d = Unavailable(d)
	if d.First().Code == decision.HiddenTool {
		return MCPAnswer{Error: UnknownTool(d.Call.Tool)}
	}
	if d.Warnings == nil {
		d.Warnings = []decision.Reason{}
	}
	return MCPAnswer{Result: &ToolResult{
		Content: []Content{{Type: "text", Text: mcpText(d)}},
		IsError: true,
		Meta:    map[string]any{MetaDecision: d},
	}}
}

// UnknownOutcome is the tools/call answer for a write whose outcome was
// lost: an error result a model can act on — what happened, that it may or
// may not have run, the command that clears it (clear, as the process
// that dispatched it spells it), not to retry — and in
// _meta["mcpx-policy/unknown_outcome"] the facts: server, tool, ledger_id,
// cause and the clear command.
func UnknownOutcome(server, tool, ledgerID, cause, clear string) ToolResult {
	text := fmt.Sprintf("Outcome unknown: %s.%s was sent to the server but no answer came back (%s). "+
		"It may or may not have happened. Writes to %q are now refused until an operator checks and clears it "+
		"(`%s`). Do not retry; tell the user.", server, tool, cause, server, clear)
	return ToolResult{
		Content: []Content{{Type: "text", Text: text}},
		IsError: true,
		Meta: map[string]any{MetaUnknownOutcome: map[string]any{
			"outcome": "unknown", "server": server, "tool": tool, "ledger_id": ledgerID, "cause": cause, "clear": clear,
		}},
	}
}

// hints says, per deciding code, what a model should do next.
var hints = map[decision.Code]string{
	decision.UnknownOutcomePending:   "An earlier write to %[1]q may or may not have happened, so writes to %[1]q are blocked until an operator checks and clears it (`%[2]s`). Do not retry; tell the user.",
	decision.ToolDefinitionChanged:   "The server changed this tool's definition after it was trusted, so it is refused until an operator reviews the change and accepts it. Do not retry; tell the user.",
	decision.LedgerUnreadable:        "Writes are blocked until an operator repairs the unknown-outcome ledger. Do not retry; tell the user.",
	decision.WriteBudgetExceeded:     "A write budget for %[1]q is spent for now. Do not retry before the time given above; read-only tools are still allowed.",
	decision.RepeatedCall:            "This exact call was already made several times just now; repeating it will not help. Do not send it again unchanged: change approach or tell the user.",
	decision.FlowDenied:              "This session has already handled data that a data-flow rule keeps away from this kind of tool, so it is refused for the rest of the session. Do not retry it in this session; tell the user.",
	decision.ArgumentRuleViolation:   "Retry only with arguments that satisfy every constraint above.",
	decision.WriteDenied:             "Writes to %[1]q are denied by policy. Do not retry this call; read-only tools are still allowed.",
	decision.OverrideDeny:            "An operator policy refuses this call. Do not retry it as is.",
	decision.InvalidInput:            "Fix the call and retry.",
	decision.PolicyError:             "The policy could not decide, so the call was refused to stay safe. Retrying will not help until an operator fixes it; tell the user.",
	decision.ConfirmationUnavailable: "This call needs a person's confirmation and this client cannot ask for it (no elicitation support). Ask the user to approve it another way; do not retry it unchanged.",
	decision.ConfirmationDeclined:    "The user declined this exact call. Do not retry it unless the user asks you to.",
}

// mcpText is the text content of an MCP refusal.
func mcpText(d decision.Decision) string {
	first := d.First()
	code := first.Code
	if code == "" {
		code = decision.PolicyError
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Refused: %s was not executed. %s (%s).\n", callName(d.Call), code.Info().Title, code)
	if first.Message != "" {
		fmt.Fprintf(&b, "Why: %s\n", first.Message)
	}
	for _, r := range d.Reasons {
		for _, v := range r.Violations {
			fmt.Fprintf(&b, "- %s\n", violationLine(v))
		}
	}
	if code == decision.UnknownArguments {
		unknown, suggestions, more := unknownArgs(first.Details)
		if len(unknown) > 0 {
			list := strings.Join(unknown, ", ")
			if more > 0 {
				list += fmt.Sprintf(" and %d more", more)
			}
			fmt.Fprintf(&b, "Unknown arguments: %s.\n", list)
		}
		if valid := stringsIn(first.Details, "valid"); len(valid) > 0 {
			fmt.Fprintf(&b, "Valid arguments: %s.\n", strings.Join(valid, ", "))
		}
		if len(suggestions) > 0 {
			fmt.Fprintf(&b, "Did you mean: %s?\n", strings.Join(suggestions, ", "))
		}
		b.WriteString("Retry with only the valid arguments.\n")
	} else if isHeld(first) {
		page := ""
		if stringIn(first.Details, HeldPage) != "" {
			page = " or by opening the link"
		}
		fmt.Fprintf(&b, heldHint+"\n", page)
	} else if h, ok := hints[code]; ok {
		switch {
		case strings.Contains(h, "%[2]"):
			clear := stringIn(first.Details, "clear")
			if clear == "" {
				clear = "mcpx-policy writes clear " + d.Call.Server // the policy's bare command
			}
			h = fmt.Sprintf(h, d.Call.Server, clear)
		case strings.Contains(h, "%[1]"):
			h = fmt.Sprintf(h, d.Call.Server)
		}
		b.WriteString(h + "\n")
	}
	for _, r := range d.Reasons {
		if r.Code != first.Code || r.Message != first.Message {
			fmt.Fprintf(&b, "Also: %s (%s)\n", r.Message, r.Code)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
