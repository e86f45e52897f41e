package mcpxpolicy

import (
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// Observer watches an Engine at work; the metrics of `serve` and `proxy`
// are one (docs/service.md#metrics). Its methods run on the goroutine of
// the Decide or Reload they report, so they must be quick and safe for
// concurrent use.
type Observer interface {
	// Decided is called once per Decide with the policy's own outcome and
	// deciding reason code ("" for an allow) — for a server in shadow mode
	// the decision as it would be enforced (Decision.Enforced) —, whether
	// shadow mode let the call go ahead against that outcome
	// (Decision.Relaxed), the time Decide took, and the error Decide
	// returns with it (nil when the policy decided).
	Decided(outcome decision.Outcome, code decision.Code, shadow bool, elapsed time.Duration, err error)
	// Reloaded is called once per Reload with its error: nil when the new
	// policy is in use, else the old one stays.
	Reloaded(err error)
}

// decidingCode is the code of the reason that decided d; "" for an allow.
func decidingCode(d *decision.Decision) decision.Code {
	if d.Outcome == decision.Allow {
		return ""
	}
	for i := range d.Reasons {
		if d.Reasons[i].Step == d.Step {
			return d.Reasons[i].Code
		}
	}
	if len(d.Reasons) > 0 {
		return d.Reasons[0].Code
	}
	return ""
}
