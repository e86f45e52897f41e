package render

import (
	"fmt"
	"strings"

	"github.com/mcpx/mcpx-policy/decision"
)

// Unavailable turns an ask into a deny for a surface that cannot ask: code
// ConfirmationUnavailable, step "confirmation", followed by the ask reasons
// so the caller still sees what needed confirming. A decision that is not
// an ask is returned unchanged: an allow stays an allow and a deny a deny;
// an ask never becomes an allow.
func Unavailable(d decision.Decision) decision.Decision {
	return confirmDeny(d, decision.ConfirmationUnavailable,
		"%s needs confirmation (%s) and this surface cannot ask for it; the call was not executed")
}

// Declined turns an ask whose confirmation a person declined (or
// cancelled) into a deny with code ConfirmationDeclined, step
// "confirmation", followed by the ask reasons. A decision that is not an ask
// is returned unchanged.
func Declined(d decision.Decision) decision.Decision {
	return confirmDeny(d, decision.ConfirmationDeclined,
		"%s needed confirmation (%s) and it was declined; the call was not executed")
}

func confirmDeny(d decision.Decision, code decision.Code, format string) decision.Decision {
	if d.Outcome != decision.Ask {
		return d
	}
	asks := askReasons(d)
	codes := make([]string, 0, len(asks))
	for _, r := range asks {
		codes = append(codes, string(r.Code))
	}
	if len(codes) == 0 {
		codes = append(codes, "ask")
	}
	out := d
	out.Outcome = decision.Deny
	out.Step = decision.StepConfirmation
	out.Reasons = append([]decision.Reason{{
		Code:    code,
		Step:    decision.StepConfirmation,
		Message: fmt.Sprintf(format, callName(d.Call), strings.Join(codes, ", ")),
		Details: map[string]any{"asked": codes},
	}}, d.Reasons...)
	return out
}
