package engine

import (
	"encoding/json"
	"fmt"

	"github.com/mcpx/mcpx-policy/internal/decision"
)

// FromValue reads the policy's decision document. Anything that is not a
// well-formed decision with a known outcome and known codes is an error, so
// the caller denies.
func FromValue(v any) (decision.Decision, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return decision.Decision{}, fmt.Errorf("decision: %w", err)
	}
	return Parse(raw)
}

// Parse reads a decision document from JSON (the engine's own output, or a
// stock OPA server's) and checks it (see FromValue).
func Parse(raw []byte) (decision.Decision, error) {
	var d decision.Decision
	if err := json.Unmarshal(raw, &d); err != nil {
		return decision.Decision{}, fmt.Errorf("decision: %w", err)
	}
	switch d.Outcome {
	case decision.Allow, decision.Ask, decision.Deny:
	default:
		return decision.Decision{}, fmt.Errorf("decision: unknown outcome %q", d.Outcome)
	}
	if d.Outcome != decision.Allow && len(d.Reasons) == 0 {
		return decision.Decision{}, fmt.Errorf("decision: %s without a reason", d.Outcome)
	}
	for _, r := range append(append([]decision.Reason{}, d.Reasons...), d.Warnings...) {
		if !r.Code.Known() {
			return decision.Decision{}, fmt.Errorf("decision: unknown reason code %q", r.Code)
		}
	}
	if d.Reasons == nil {
		d.Reasons = []decision.Reason{}
	}
	if d.Warnings == nil {
		d.Warnings = []decision.Reason{}
	}
	return d, nil
}
