package render

import (
	"errors"
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

// UnavailableFor is Unavailable for an ask that could not be put to a
// person because of err: when err is a *PromptTooLargeError the deny says
// that the call is too large to show in full (details "refused", "bytes"
// and "limit"), since a person may only approve what they can read; any
// other err gives Unavailable(d), whose message names no internal error.
// A decision that is not an ask is returned unchanged.
func UnavailableFor(d decision.Decision, err error) decision.Decision {
	var big *PromptTooLargeError
	if d.Outcome != decision.Ask || !errors.As(err, &big) {
		return Unavailable(d)
	}
	out := confirmDeny(d, decision.ConfirmationUnavailable,
		"%s needs confirmation (%s) and is too large to show in full for confirmation (%d bytes, at most %d): a person approves only what they can read; the call was not executed",
		big.Bytes, big.Limit)
	out.Reasons[0].Details["refused"] = "too large to show"
	out.Reasons[0].Details["bytes"] = big.Bytes
	out.Reasons[0].Details["limit"] = big.Limit
	return out
}

// Declined turns an ask whose confirmation a person declined (or
// cancelled) into a deny with code ConfirmationDeclined, step
// "confirmation", followed by the ask reasons. A decision that is not an ask
// is returned unchanged.
func Declined(d decision.Decision) decision.Decision {
	return confirmDeny(d, decision.ConfirmationDeclined,
		"%s needed confirmation (%s) and it was declined; the call was not executed")
}

func confirmDeny(d decision.Decision, code decision.Code, format string, more ...any) decision.Decision {
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
		Message: fmt.Sprintf(format, append([]any{callName(d.Call), strings.Join(codes, ", ")}, more...)...),
		Details: map[string]any{"asked": codes},
	}}, d.Reasons...)
	return out
}
