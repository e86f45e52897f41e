package mcpxpolicy

import (
	"errors"
	"fmt"

	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// OPAInput returns, as JSON, the exact input document Decide evaluates for
// call (docs/fleet.md): the server's ledger entries as read now, the tool's
// pin status (input.tool.pin, when the server pins tool definitions: the
// tool is compared with its pin, and pinned when seen first, as Decide
// does), and
// "call_sha256", the SHA-256 of the RFC 8785 canonical call that the policy
// echoes in decision.call.sha256 (left out when the arguments have no
// canonical form, a number beyond a double's range: the policy then denies
// the call as InvalidInput, naming the argument). It is what a gateway POSTs as
// {"input": …} to /v1/data/mcpx/decision on a stock OPA server that runs
// this config's bundle (docs/fleet.md); that server answers the decision
// Decide gives. Safe for concurrent use.
func (e *Engine) OPAInput(call Call) ([]byte, error) {
	led, call := e.stateView(e.cur.Load().compiled, call)
	b, err := engine.InputJSON(call, led)
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return b, nil
}

// stateView is what the policy reads from the state dir for call (the
// ledger's view, the tool's pin) and the call as it judges it (pinView).
func (e *Engine) stateView(c *config.Compiled, call Call) (*engine.Ledger, Call) {
	led := e.ledgerView(call.Server)
	led.Pin, call = e.pinView(c, call)
	return led, call
}

// ledgerView is what the policy sees of server's unknown-outcome entries:
// the oldest ledger.Listed of them and the total, so that a decision and
// its deny stay small however many there are (docs/ledger.md), and, when
// there are any, the command that clears them (ClearCommand), which the
// deny names; when they cannot be read, the `mcpx-policy writes` command
// that says why, as this Engine's operator runs it (with --state-dir or
// the --config files), which LedgerUnreadable's details name (its message
// stays path-free: an agent reads it). It must
// match what Decide feeds the engine (the stock-OPA equivalence test
// compares the two on a corrupt ledger).
func (e *Engine) ledgerView(server string) *engine.Ledger {
	led := &engine.Ledger{}
	p, err := e.ledger.Pending(server, ledger.Listed)
	switch {
	case errors.Is(err, ledger.ErrNewerVersion):
		led.Unreadable = "written by a newer mcpx-policy; an operator runs 'mcpx-policy writes' to see why"
	case errors.Is(err, ledger.ErrUnsafe):
		led.Unreadable = "not trusted: other users may write the state directory or a ledger file; an operator runs 'mcpx-policy writes' to see what to fix"
	case err != nil && e.ledgerCfg.Store == config.StorePostgres:
		led.Unreadable = "the ledger database does not answer or cannot be used; an operator runs '" + e.commands().Writes() + "' to see why"
	case err != nil:
		led.Unreadable = "corrupt or unreadable; an operator runs 'mcpx-policy writes' to see why"
	default:
		led.Entries, led.Total = p.Entries, p.Total
		if led.Total > 0 || len(led.Entries) > 0 {
			led.Clear = e.ClearCommand(server, "")
		}
	}
	if led.Unreadable != "" {
		led.Writes = e.commands().Writes()
	}
	return led
}

// ParseDecision reads the decision document a stock OPA server answers for
// OPAInput's input (the "result" of POST /v1/data/mcpx/decision) and checks
// it as Decide checks the embedded engine's: anything that is not a
// well-formed decision with a known outcome, known reason codes and
// reasons that agree with the outcome is an error, and the gateway denies
// the call (docs/fleet.md). A missing result or a non-200 answer is the
// caller's to treat as a deny before it gets here.
func ParseDecision(result []byte) (Decision, error) {
	d, err := engine.Parse(result)
	if err != nil {
		return Decision{}, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return d, nil
}
