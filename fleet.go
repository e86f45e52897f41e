package mcpxpolicy

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// A gateway that asks a fleet of stock OPA servers (docs/fleet.md) sends
// OPAInput's document to POST /v1/data/mcpx/decision and reads the answer
// with ParseDecision.

// OPAInput returns, as JSON, the exact input document Decide evaluates for
// call (docs/fleet.md): the server's ledger entries as read now, the tool's
// pin status (input.tool.pin, when the server pins tool definitions: the
// tool is compared with its pin, and pinned when seen first, as Decide
// does), and "call_sha256", the SHA-256 of the RFC 8785 canonical call
// that the policy echoes in decision.call.sha256 (left out when the
// arguments have no canonical form, a number beyond a double's range: the
// policy then denies the call as InvalidInput, naming the argument). It is
// what a gateway POSTs as {"input": …} to /v1/data/mcpx/decision on a
// stock OPA server that runs this config's bundle; that server answers the
// decision Decide gives. Safe for concurrent use.
func (e *Engine) OPAInput(call decision.Call) ([]byte, error) {
	led, call := e.stateView(e.cur.Load().compiled, call)
	b, err := engine.InputJSON(call, led)
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return b, nil
}

// ParseDecision reads the decision document a stock OPA server answers for
// OPAInput(call)'s input (the "result" of POST /v1/data/mcpx/decision) and
// checks it as Decide checks the embedded engine's: anything that is not a
// well-formed decision with a known outcome, known reason codes and
// reasons that agree with the outcome is an error, and so is a decision
// about another call (another server or tool, or a call.sha256 that is
// not call's) — the gateway denies the call (docs/fleet.md). The commands
// the decision names are spelled for this Engine's process, as Decide's
// are (Commands). A missing result or a non-200 answer is the caller's to
// treat as a deny before it gets here.
//
// Like Decide, it is the decision a caller acts on: with data-flow rules
// in the config, a decision that lets call through (an allow, or an ask)
// touches its tool's labels in the session of call.Caller and
// call.Session, which the next OPAInput of that session carries
// (docs/configuration.md#labels-and-flows). Safe for concurrent use.
func (e *Engine) ParseDecision(call decision.Call, result []byte) (decision.Decision, error) {
	d, err := engine.Parse(result)
	if err != nil {
		return decision.Decision{}, fmt.Errorf("mcpxpolicy: %w", err)
	}
	if err := decisionOf(call, d.Call); err != nil {
		return decision.Decision{}, fmt.Errorf("mcpxpolicy: %w", err)
	}
	if c := e.cur.Load().compiled; len(c.Flows) > 0 && (d.Outcome == decision.Allow || d.Outcome == decision.Ask) {
		_, judged := e.pinView(c, call) // the call as OPAInput gave it to the policy
		e.flowTouch(c, judged, d)
	}
	return e.cmds.spell(d, seenListed(d)), nil
}

// decisionOf checks that a stock OPA's decision is about call: its server,
// its tool and, when the decision names one, its call's SHA-256.
func decisionOf(call decision.Call, ref decision.CallRef) error {
	if ref.Server != call.Server || ref.Tool != call.Tool.Name {
		return fmt.Errorf("the decision is about %s.%s, not the call %s.%s", ref.Server, ref.Tool, call.Server, call.Tool.Name)
	}
	if ref.SHA256 == "" {
		return nil
	}
	if sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args); err != nil || sum != ref.SHA256 {
		return fmt.Errorf("the decision is about another call of %s.%s (call.sha256 %s)", call.Server, call.Tool.Name, ref.SHA256)
	}
	return nil
}

// seenListed is the clear token of the unknown-outcome entries a stock
// OPA's decision lists, when it lists all of them (its details carry as
// many entries as their total): the gateway that reads the answer spells
// the same `writes clear … --seen` the engine does. "" when the decision
// lists none or only some (the clear command then clears every entry).
func seenListed(d decision.Decision) string {
	rs := d.Reasons
	if d.Shadow != nil {
		rs = append(slices.Clone(rs), d.Shadow.Reasons...)
	}
	for _, r := range rs {
		if r.Code != decision.UnknownOutcomePending {
			continue
		}
		entries, _ := r.Details["entries"].([]any)
		var ids []string
		for _, e := range entries {
			m, _ := e.(map[string]any)
			if id, ok := m["id"].(string); ok {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 || len(ids) != len(entries) || fmt.Sprint(r.Details["total"]) != strconv.Itoa(len(ids)) {
			return ""
		}
		return ledger.SeenIDs(ids)
	}
	return ""
}
