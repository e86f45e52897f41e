// Package decision holds the plain values of a policy decision: the call that
// is judged, the outcome, its reasons and their closed set of codes, and the
// canonical hashes that identify a call and a tool's definition. It is the
// SDK's package of value types (the root package mcpxpolicy takes and returns
// them), readable with go doc. It is the leaf of the module: it imports
// nothing of the project and nothing of OPA, so every part (engine, render,
// ledger, the adapters) can depend on it.
package decision

// Outcome is the verdict on one tool call.
type Outcome string

// The three outcomes, from least to most severe.
const (
	Allow Outcome = "allow"
	Ask   Outcome = "ask"
	Deny  Outcome = "deny"
)

// Severity orders outcomes: allow 0, ask 1, deny 2; an unknown outcome counts
// as a deny (fail closed).
func (o Outcome) Severity() int {
	switch o {
	case Allow:
		return 0
	case Ask:
		return 1
	default:
		return 2
	}
}

// Step names the check that decided. It is "" for an allow.
type Step string

// The steps of the fixed check order (docs/check-order.md), plus StepInput for
// malformed input and evaluation failures.
const (
	StepNone Step = ""
	// StepPin is the pinned-definition check, before step 1 (off unless
	// pinTools is set; docs/check-order.md).
	StepPin    Step = "pin"
	StepHidden Step = "hidden"
	StepLedger Step = "ledger"
	// StepBudget is the write-budget check, right after the ledger's
	// (docs/check-order.md, docs/decisions/0027-write-budgets.md).
	StepBudget Step = "budget"
	// StepFlow is the data-flow check, right after the budgets'
	// (docs/check-order.md, docs/decisions/0029-data-flow-rules.md).
	StepFlow             Step = "flow"
	StepUnknownArgs      Step = "unknown_args"
	StepArgumentRules    Step = "argument_rules"
	StepWriteMode        Step = "write_mode"
	StepDestructiveFloor Step = "destructive_floor"
	StepOverrides        Step = "overrides"
	StepInput            Step = "input"
	// StepConfirmation is the step a surface reports when it turns an ask
	// into a deny (ConfirmationUnavailable, ConfirmationDeclined).
	StepConfirmation Step = "confirmation"
)

// Decision is the decision document (docs/check-order.md). A deny is a value, not an
// error: every refusal is a Decision with Outcome Deny and at least one
// reason.
//
// Outcome is what a surface acts on. For a server in shadow mode
// (docs/check-order.md#shadow-mode) Shadow holds the policy's own outcome,
// step and reasons, and Outcome is an allow with no reason unless a reason
// is one shadow mode never relaxes; Shadow is nil for a server that
// enforces.
type Decision struct {
	Outcome     Outcome  `json:"outcome"`
	Step        Step     `json:"step"`
	Reasons     []Reason `json:"reasons"`
	Warnings    []Reason `json:"warnings"`
	Write       bool     `json:"write"`
	Destructive bool     `json:"destructive"`
	Call        CallRef  `json:"call"`
	Shadow      *Shadow  `json:"shadow,omitempty"`
}

// Shadow is the decision of a server in shadow mode as it would be if the
// server enforced: the policy's own outcome, deciding step and reasons.
type Shadow struct {
	Outcome Outcome  `json:"outcome"`
	Step    Step     `json:"step"`
	Reasons []Reason `json:"reasons"`
}

// Relaxed reports whether shadow mode let the call go further than the
// policy would: the server is in shadow mode and its policy's outcome is
// more severe than Outcome (a deny now an ask or an allow, an ask now an
// allow). A surface that turns an ask into a deny (no one to ask, a "no")
// makes it stricter, never relaxed.
func (d Decision) Relaxed() bool {
	return d.Shadow != nil && d.Shadow.Outcome.Severity() > d.Outcome.Severity()
}

// Enforced returns the decision as it would be if the server enforced:
// for a server in shadow mode, d with the outcome, step and reasons under
// Shadow and no Shadow; otherwise d itself. What a surface would have
// answered, for logs and for showing what shadow mode let through.
func (d Decision) Enforced() Decision {
	if d.Shadow == nil {
		return d
	}
	out := d
	out.Outcome, out.Step, out.Reasons, out.Shadow = d.Shadow.Outcome, d.Shadow.Step, d.Shadow.Reasons, nil
	return out
}

// CallRef identifies the exact call: SHA256 is the hex SHA-256 of the RFC
// 8785 canonical form of {"server","tool","arguments"}.
type CallRef struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	SHA256 string `json:"sha256"`
}

// Reason is one finding. Details carries code-specific data (unknown keys,
// ledger entries, an override's own code); Violations is set for
// ArgumentRuleViolation.
type Reason struct {
	Code       Code           `json:"code"`
	Step       Step           `json:"step"`
	Message    string         `json:"message"`
	Violations []Violation    `json:"violations,omitempty"`
	Details    map[string]any `json:"details,omitempty"`
}

// Violation is one failed JSON Schema constraint of an argument rule.
// Path is a JSON Pointer from the arguments' root; Value is the offending
// value, already cut if long.
type Violation struct {
	Path       string  `json:"path"`
	Value      any     `json:"value"`
	Constraint string  `json:"constraint"`
	Expected   any     `json:"expected"`
	Detail     string  `json:"detail,omitempty"`
	Rule       RuleRef `json:"rule"`
}

// RuleRef names the argument rule a violation comes from.
type RuleRef struct {
	ID          string `json:"id"`
	Origin      string `json:"origin"`
	Description string `json:"description,omitempty"`
}

// Denied returns a deny decision with a single reason. It is the fail-closed
// answer of every adapter when it cannot evaluate the policy; like the
// policy's own fail-closed decisions it assumes the worst of the call
// (a destructive write).
func Denied(call CallRef, code Code, message string) Decision {
	step := code.Info().Step
	return Decision{
		Outcome:     Deny,
		Step:        step,
		Reasons:     []Reason{{Code: code, Step: step, Message: message}},
		Warnings:    []Reason{},
		Write:       true,
		Destructive: true,
		Call:        call,
	}
}

// First returns the reason that decided: the first reason whose step is the
// decision's step, or the first reason, or a zero Reason for an allow.
func (d Decision) First() Reason {
	for _, r := range d.Reasons {
		if r.Step == d.Step {
			return r
		}
	}
	if len(d.Reasons) > 0 {
		return d.Reasons[0]
	}
	return Reason{}
}

// Refusal is an error that carries the deny a surface answers with when
// a step after the decision refuses the call — a write budget found spent
// when the write was about to be dispatched (WriteBudgetExceeded): errors.As
// finds it, and Decision is rendered as any refusal is. Err is the cause.
type Refusal struct {
	Decision Decision
	Err      error
}

// Error is the cause's text, else the deny's first message.
func (r *Refusal) Error() string {
	if r.Err != nil {
		return r.Err.Error()
	}
	return r.Decision.First().Message
}

// Unwrap returns the cause.
func (r *Refusal) Unwrap() error { return r.Err }
