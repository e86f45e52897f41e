package mcpxpolicy

import "github.com/mcpx/mcpx-policy/decision"

// DecisionResponse is a decision as `mcpx-policy eval --format json`
// prints it and serve's POST /v1/decide answers it (docs/service.md): the
// decision document, redacted, with its rendering for the call's surface
// ("rendered") and, for an ask put on hold, the approval request
// ("approval") or why none could be made ("approval_error"). It holds the
// fields of Decision under the same names; its keys are in alphabetical
// order. Respond makes one.
type DecisionResponse struct {
	// Approval is the request an ask was put on hold as.
	Approval *ApprovalRequest `json:"approval,omitempty"`
	// ApprovalError says why an ask could not be put on hold.
	ApprovalError string            `json:"approval_error,omitempty"`
	Call          decision.CallRef  `json:"call"`
	Destructive   bool              `json:"destructive"`
	Outcome       decision.Outcome  `json:"outcome"`
	Reasons       []decision.Reason `json:"reasons"`
	Rendered      Rendering         `json:"rendered"`
	Shadow        *decision.Shadow  `json:"shadow,omitempty"`
	Step          decision.Step     `json:"step"`
	Warnings      []decision.Reason `json:"warnings"`
	Write         bool              `json:"write"`
}

// Respond is the response for call's decision d on call.Surface: d
// redacted (Redact), its rendering (Render; RenderApproval when held
// names the approval request the ask was put on hold as) and the
// approval fields. held is nil when d was not put on hold; holdErr, when
// not nil, is why an ask could not be. When the rendering fails, the
// response has every other field and a zero Rendered (JSON null), and the
// error is returned with it.
func Respond(call decision.Call, d decision.Decision, held *ApprovalRequest, holdErr error) (DecisionResponse, error) {
	var rendered Rendering
	var err error
	if held != nil {
		rendered, err = RenderApproval(call.Surface, call, d, *held)
	} else {
		rendered, err = Render(call.Surface, call, d)
	}
	r := Redact(call, d)
	out := DecisionResponse{
		Approval: held, Call: r.Call, Destructive: r.Destructive, Outcome: r.Outcome,
		Reasons: r.Reasons, Rendered: rendered, Shadow: r.Shadow, Step: r.Step,
		Warnings: r.Warnings, Write: r.Write,
	}
	if holdErr != nil {
		out.ApprovalError = holdErr.Error()
	}
	return out, err
}

// Decision returns the decision document the response holds.
func (r DecisionResponse) Decision() decision.Decision {
	return decision.Decision{
		Outcome: r.Outcome, Step: r.Step, Reasons: r.Reasons, Warnings: r.Warnings,
		Write: r.Write, Destructive: r.Destructive, Call: r.Call, Shadow: r.Shadow,
	}
}
