package mcpxpolicy

import "github.com/mcpx/mcpx-policy/decision"

// The decision's value types. They are plain Go values shared by every part
// of the module; see the internal/decision documentation for each field.
type (
	// Call is one tool call to judge.
	Call = decision.Call
	// Tool is an MCP Tool as the server's tools/list returns it.
	Tool = decision.Tool
	// Annotations are the MCP tool hints; nil hints take the MCP defaults.
	Annotations = decision.Annotations
	// Principal is who the call is made for (read by operator overrides).
	Principal = decision.Principal
	// Decision is the decision document (docs/check-order.md). Outcome is what
	// to act on; for a server in shadow mode Shadow holds the policy's own
	// decision (docs/check-order.md#shadow-mode).
	Decision = decision.Decision
	// Shadow is the decision of a server in shadow mode as it would be
	// enforced: Decision.Enforced returns it whole, Decision.Relaxed says
	// whether shadow mode let the call go ahead against it.
	Shadow = decision.Shadow
	// Reason is one finding with its code, step and message.
	Reason = decision.Reason
	// Violation is one failed argument-rule constraint.
	Violation = decision.Violation
	// Outcome is allow, ask or deny.
	Outcome = decision.Outcome
	// Code is a reason code from the closed set.
	Code = decision.Code
	// Step names a step of the check order.
	Step = decision.Step
	// CallRef identifies the exact call a decision is for: server, tool and
	// CallSHA256.
	CallRef = decision.CallRef
	// RuleRef names the argument rule a violation comes from.
	RuleRef = decision.RuleRef
)

// The outcomes.
const (
	Allow = decision.Allow
	Ask   = decision.Ask
	Deny  = decision.Deny
)

// The closed set of reason codes.
const (
	HiddenTool                   = decision.HiddenTool
	UnknownOutcomePending        = decision.UnknownOutcomePending
	UnknownArguments             = decision.UnknownArguments
	ArgumentRuleViolation        = decision.ArgumentRuleViolation
	WriteDenied                  = decision.WriteDenied
	WriteNeedsConfirmation       = decision.WriteNeedsConfirmation
	DestructiveNeedsConfirmation = decision.DestructiveNeedsConfirmation
	OverrideDeny                 = decision.OverrideDeny
	OverrideAsk                  = decision.OverrideAsk
	IgnoredArguments             = decision.IgnoredArguments
	InvalidInput                 = decision.InvalidInput
	PolicyError                  = decision.PolicyError
	LedgerUnreadable             = decision.LedgerUnreadable
	ConfirmationUnavailable      = decision.ConfirmationUnavailable
	ConfirmationDeclined         = decision.ConfirmationDeclined
	ToolDefinitionChanged        = decision.ToolDefinitionChanged
)

// CallSHA256 is the hex SHA-256 of the RFC 8785 canonical call
// {"server","tool","arguments"}: the identity of the exact call in the
// ledger, approvals and logs.
func CallSHA256(server, tool string, args map[string]any) (string, error) {
	return decision.CallSHA256(server, tool, args)
}

// ArgsSHA256 is the hex SHA-256 of the RFC 8785 canonical arguments (nil
// counts as {}): what logs and the ledger show in place of the arguments.
func ArgsSHA256(args map[string]any) (string, error) { return decision.ArgsSHA256(args) }

// CodeInfo is what the closed set says of one reason code: its title, the
// step it belongs to, its effect ("" for a warning) and its page under
// docs/reasons/.
type CodeInfo = decision.CodeInfo

// ReasonCodes lists the closed set of reason codes in check order, each
// with its CodeInfo. The slice is the caller's.
func ReasonCodes() []CodeInfo {
	out := make([]CodeInfo, len(decision.Codes))
	for i, c := range decision.Codes {
		out[i] = c.Code.Info()
	}
	return out
}
