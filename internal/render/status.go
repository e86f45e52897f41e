package render

import (
	"net/http"

	"github.com/mcpx/mcpx-policy/decision"
)

// statuses is the one table from reason code to HTTP status. Nothing else in
// the module spells an HTTP status for a reason; docs/surfaces.md explains
// each choice.
var statuses = map[decision.Code]int{
	// The request names something the caller may not use or sent arguments
	// the tool or its rules refuse: the caller can fix the request. HiddenTool
	// reads exactly like mcpx's HiddenTool, which is a 400.
	decision.HiddenTool:            http.StatusBadRequest,
	decision.UnknownArguments:      http.StatusBadRequest,
	decision.ArgumentRuleViolation: http.StatusBadRequest,
	decision.InvalidInput:          http.StatusBadRequest,

	// Understood and refused by policy; the same call will be refused again.
	decision.WriteDenied:          http.StatusForbidden,
	decision.OverrideDeny:         http.StatusForbidden,
	decision.ConfirmationDeclined: http.StatusForbidden,

	// The server's state conflicts with the call until an operator clears the
	// unknown-outcome ledger entries; retrying after the clear can succeed.
	decision.UnknownOutcomePending: http.StatusConflict,
	// Likewise the tool's definition conflicts with its pin until an
	// operator accepts the new one (refused under pinTools: deny; under ask
	// the decision is an ask, 428, as StatusOf says).
	decision.ToolDefinitionChanged: http.StatusConflict,

	// A write budget is spent for its window: the same call can succeed
	// after the time the reason names (its details' retry_at).
	decision.WriteBudgetExceeded: http.StatusTooManyRequests,
	// Likewise a loop breaker: the same call, repeated too often.
	decision.RepeatedCall: http.StatusTooManyRequests,

	// A data-flow rule refuses the call for the rest of the session: the
	// request itself is not at fault and no retry in the session helps.
	decision.FlowDenied: http.StatusForbidden,

	// The call needs a person's confirmation this surface could not obtain:
	// 428 Precondition Required (RFC 6585) says "the same request can succeed
	// once the missing precondition — an approval — is supplied", which 403
	// would deny. A raw ask rendered for a surface without a broker is the
	// same thing.
	decision.ConfirmationUnavailable:      http.StatusPreconditionRequired,
	decision.WriteNeedsConfirmation:       http.StatusPreconditionRequired,
	decision.DestructiveNeedsConfirmation: http.StatusPreconditionRequired,
	decision.OverrideAsk:                  http.StatusPreconditionRequired,
	decision.FlowNeedsConfirmation:        http.StatusPreconditionRequired,

	// The gate itself cannot work. A corrupt or newer ledger is a state the
	// service is in until an operator repairs it: 503. An evaluation failure
	// or undefined result is a fault of the policy, not of the request: 500.
	decision.LedgerUnreadable: http.StatusServiceUnavailable,
	decision.PolicyError:      http.StatusInternalServerError,

	// A warning never decides; an allow that carries it is a 200.
	decision.IgnoredArguments: http.StatusOK,
	decision.ConfigLoosened:   http.StatusOK,
}

// Status returns the HTTP status for code c. A code outside the closed set
// gets PolicyError's status, so a stray code can never read as a success.
func Status(c decision.Code) int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return statuses[decision.PolicyError]
}

// StatusOf returns the HTTP status of d: 200 for an allow, 428 for an ask
// (whichever code asked: ToolDefinitionChanged asks or denies), else the
// status of the reason that decided (decision.Decision.First). A deny or
// an unknown outcome without reasons is a PolicyError (500): fail closed.
func StatusOf(d decision.Decision) int {
	if d.Outcome == decision.Allow {
		return http.StatusOK
	}
	if d.Outcome == decision.Ask && len(d.Reasons) > 0 {
		return http.StatusPreconditionRequired
	}
	r := d.First()
	if r.Code == "" {
		return Status(decision.PolicyError)
	}
	if s := Status(r.Code); s != http.StatusOK {
		return s
	}
	return Status(decision.PolicyError)
}
