package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpx/mcpx-policy/internal/decision"
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

// ToolResult is an MCP CallToolResult with the fields a refusal uses, under
// the SDK's wire names.
type ToolResult struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
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

// MCP renders d for an MCP client (the proxy's tools/call answer). A hidden
// tool answers exactly as an unknown tool does (UnknownTool). Any other
// refusal is a CallToolResult with isError true, one text content a model
// can act on — what was refused, why, what would be accepted — and the
// redacted decision document as structuredContent. An ask is rendered as
// Unavailable(d): the proxy asks through Prompt(…).Elicitation() when the
// client supports elicitation, and answers MCP(d) only when it does not.
func MCP(d decision.Decision) MCPAnswer {
	if d.Outcome == decision.Allow {
		return MCPAnswer{}
	}
	d = Unavailable(Redact(d, nil))
	if d.First().Code == decision.HiddenTool {
		return MCPAnswer{Error: UnknownTool(d.Call.Tool)}
	}
	if d.Warnings == nil {
		d.Warnings = []decision.Reason{}
	}
	return MCPAnswer{Result: &ToolResult{
		Content:           []Content{{Type: "text", Text: mcpText(d)}},
		StructuredContent: d,
		IsError:           true,
	}}
}

// hints says, per deciding code, what a model should do next.
var hints = map[decision.Code]string{
	decision.UnknownOutcomePending:   "An earlier write to %[1]q may or may not have happened, so writes to %[1]q are blocked until an operator checks and clears it (`mcpx-policy writes clear %[1]s`). Do not retry; tell the user.",
	decision.LedgerUnreadable:        "Writes are blocked until an operator repairs the unknown-outcome ledger. Do not retry; tell the user.",
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
	} else if h, ok := hints[code]; ok {
		if strings.Contains(h, "%[1]") {
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
