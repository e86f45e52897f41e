package mcpxpolicy

import (
	"fmt"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/engine"
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
// OPAInput's input (the "result" of POST /v1/data/mcpx/decision) and checks
// it as Decide checks the embedded engine's: anything that is not a
// well-formed decision with a known outcome, known reason codes and
// reasons that agree with the outcome is an error, and the gateway denies
// the call (docs/fleet.md). The commands the decision names are spelled
// for this Engine's process, as Decide's are (Commands). A missing result
// or a non-200 answer is the caller's to treat as a deny before it gets
// here.
func (e *Engine) ParseDecision(result []byte) (decision.Decision, error) {
	d, err := engine.Parse(result)
	if err != nil {
		return decision.Decision{}, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return e.cmds.spell(d, ""), nil
}
