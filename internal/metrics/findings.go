package metrics

// Findings per write budget, loop breaker and data-flow rule: which of the
// operator's session-aware limits refuse or ask, by id. The ids are the
// operator's own (config), never a client's; past MaxFindingIDs distinct
// (kind, id) pairs the rest are counted under id="_other", so a config
// that changes over many reloads cannot grow the series without bound.

import "github.com/prometheus/client_golang/prometheus"

// MaxFindingIDs bounds the id label of mcpx_policy_policy_findings_total.
const MaxFindingIDs = 256

// OtherFinding is the id label the findings past MaxFindingIDs are
// counted under.
const OtherFinding = "_other"

// findingKinds is the closed set of the kind label.
var findingKinds = map[string]bool{"budget": true, "loop_breaker": true, "flow": true}

func newFindings() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "policy_findings_total",
		Help: "Deny and ask findings of write budgets, loop breakers and data-flow rules, by kind (budget, loop_breaker, flow), the operator's id, outcome (deny, ask) and shadow (true: the server is in shadow mode and the call went ahead).",
	}, []string{"kind", "id", "outcome", "shadow"})
}

// Finding counts one finding of a write budget, loop breaker or flow
// rule of a decision (the Engine's Observer calls it for each of them,
// the decision as it would be enforced): its kind, its id, the finding's
// outcome and whether shadow mode let the call go ahead. A kind outside
// the closed set is not counted.
func (m *Metrics) Finding(kind, id, outcome string, shadow bool) {
	if !findingKinds[kind] || (outcome != "deny" && outcome != "ask") {
		return
	}
	key := kind + "\x00" + id
	m.mu.Lock()
	if m.findingIDs == nil {
		m.findingIDs = map[string]bool{}
	}
	if !m.findingIDs[key] {
		if len(m.findingIDs) >= MaxFindingIDs {
			id = OtherFinding
		} else {
			m.findingIDs[key] = true
		}
	}
	m.mu.Unlock()
	s := "false"
	if shadow {
		s = "true"
	}
	m.findings.WithLabelValues(kind, id, outcome, s).Inc()
}
