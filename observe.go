package mcpxpolicy

import (
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// Observer watches an Engine at work; the metrics of `serve` and `proxy`
// are one (docs/service.md#metrics). Its methods run on the goroutine of
// the Decide or Reload they report, so they must be quick and safe for
// concurrent use. An Observer that also has a method
// Finding(kind, id, outcome string, shadow bool) is told, after Decided,
// of each finding of a write budget ("budget"), loop breaker
// ("loop_breaker") or data-flow rule ("flow") in the decision as it would
// be enforced, with the operator's id of it.
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

// findingObserver is an Observer that also counts the findings of write
// budgets, loop breakers and data-flow rules by their ids (the metrics of
// serve and proxy --listen do).
type findingObserver interface {
	Finding(kind, id, outcome string, shadow bool)
}

// observeFindings tells obs, when it counts them, of each finding of a
// write budget ("budget"), loop breaker ("loop_breaker") or flow rule
// ("flow") in enforced, the decision as it would be enforced (relaxed:
// shadow mode let the call go ahead).
func observeFindings(obs Observer, enforced decision.Decision, relaxed bool) {
	f, ok := obs.(findingObserver)
	if !ok {
		return
	}
	for _, r := range enforced.Reasons {
		outcome := "deny"
		if r.Code == decision.FlowNeedsConfirmation {
			outcome = "ask"
		}
		for _, k := range []struct{ kind, key string }{{"budget", "budget"}, {"loop_breaker", "loop_breaker"}, {"flow", "flow"}} {
			if id, _ := r.Details[k.key].(string); id != "" && (r.Step == decision.StepBudget || r.Step == decision.StepFlow) {
				f.Finding(k.kind, id, outcome, relaxed)
			}
		}
	}
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
