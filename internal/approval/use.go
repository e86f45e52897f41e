package approval

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpx/mcpx-policy/decision"
)

// ErrRefused is matched, besides the specific error, by every error of
// Use about the approval itself (unknown, expired, mismatched, pending or
// declined) rather than a failure of the store.
var ErrRefused = errors.New("approval refused")

// Use spends request id on ask, the decision of the call it was made for
// decided again, whose unredacted call has sha256 and whose prompt has
// binding (the digest Request was given): approved, unexpired and a match,
// it is used — once, in every process sharing the state dir — and Use
// returns ask as the allow it was approved as (Allowed). Otherwise it
// returns the error, matching ErrRefused when it is about the approval
// (Consume's errors); the caller denies with Refusal.
func (s *Store) Use(id, sha256, binding string, ask decision.Decision) (decision.Decision, error) {
	if _, err := s.Consume(id, sha256, binding); err != nil {
		for _, refusal := range []error{ErrUnknown, ErrExpired, ErrMismatch, ErrNotApproved, ErrDeclined} {
			if errors.Is(err, refusal) {
				return ask, fmt.Errorf("%w: %w", ErrRefused, err)
			}
		}
		return ask, err
	}
	return Allowed(ask), nil
}

// Allowed is the ask d once its approval is used: an allow, its reasons
// kept (the log shows what was confirmed). In shadow mode an ask the
// policy made itself (a binding one) is answered the same way enforced, so
// Shadow becomes that allow too; an ask shadow mode relaxed from a deny
// keeps the deny under Shadow.
func Allowed(d decision.Decision) decision.Decision {
	d.Outcome = decision.Allow
	d.Step = decision.StepNone
	if d.Shadow != nil && d.Shadow.Outcome == decision.Ask {
		d.Shadow = &decision.Shadow{Outcome: decision.Allow, Step: decision.StepNone, Reasons: d.Reasons}
	}
	return d
}

// Refusal is the deny of an ask whose approval id could not be used
// because of err. unavailable and declined are the ask as a surface that
// cannot ask denies it (ConfirmationUnavailable) and as a person's no
// does (ConfirmationDeclined); their first reason is the one it words:
// declined for ErrDeclined, else unavailable with a message naming the
// approval and why it cannot be used (details "approval" and "refused").
func Refusal(unavailable, declined decision.Decision, id string, err error) decision.Decision {
	if errors.Is(err, ErrDeclined) {
		declined.Reasons[0].Details["approval"] = id
		return declined
	}
	why := Why(err)
	r := &unavailable.Reasons[0]
	codes, _ := r.Details["asked"].([]string)
	r.Message = fmt.Sprintf("%s.%s needs confirmation (%s) and approval %s cannot be used: %s; the call was not executed",
		unavailable.Call.Server, unavailable.Call.Tool, strings.Join(codes, ", "), id, why)
	r.Details["approval"] = id
	r.Details["refused"] = why
	return unavailable
}

// Why says why an approval could not be used, in words fit for the agent
// whose call it denies.
func Why(err error) string {
	switch {
	case errors.Is(err, ErrNotApproved):
		return "nobody has approved it yet"
	case errors.Is(err, ErrUnknown):
		return "no such approval is waiting: it was never made here, was already used, or expired"
	case errors.Is(err, ErrExpired):
		return "it expired"
	case errors.Is(err, ErrMismatch):
		return "it was given for another call, or for other reasons to ask; it is void now"
	}
	return "the approval store failed: " + err.Error()
}
