package mcpxpolicy

import (
	"errors"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/ledger"
	"github.com/mcpx/mcpx-policy/internal/pins"
)

// What the policy reads from the state dir, and the one place the Engine
// feeds it to the engine: the server's unknown-outcome entries (Writes)
// and the tool's pin (Pins). Decide and OPAInput both read it here, so a
// gateway that asks a stock OPA sends exactly what the embedded engine
// evaluates (the stock-OPA equivalence test compares the two, a corrupt
// ledger included). Nothing here is spelled for a person: the policy names
// the bare commands, and the answer spells them (commands.go).

// stateView is what the policy reads from the state for call (the ledger's
// view, the tool's pin) and the call as it judges it: while the tool's
// definition differs from its pin, its annotations are the stricter of
// the two.
func (e *Engine) stateView(c *config.Compiled, call decision.Call) (*engine.Ledger, decision.Call) {
	pin, call := e.pinView(c, call)
	return e.restOfState(c, call, pin), call
}

// restOfState is stateView for a call whose pin pinView has read: the
// ledger's view, the budgets' counts and the session's labels.
func (e *Engine) restOfState(c *config.Compiled, call decision.Call, pin *engine.Pin) *engine.Ledger {
	led := e.ledgerView(call.Server)
	led.Pin = pin
	if limits, _ := budgetLimits(c, call); len(limits) > 0 {
		e.budgetView(led, call.Server, limits)
	}
	if len(c.Flows) > 0 {
		e.flowView(c, led, call)
	}
	return led
}

// ledgerView is what the policy sees of server's unknown-outcome entries:
// the oldest ledger.Listed of them and the total, so that a decision and
// its deny stay small however many there are (docs/ledger.md), or, when
// they cannot be read, why, in words fit for an agent (no paths).
func (e *Engine) ledgerView(server string) *engine.Ledger {
	led := &engine.Ledger{}
	p, err := e.writes.s.Pending(server, ledger.Listed)
	switch {
	case errors.Is(err, ledger.ErrNewerVersion):
		led.Unreadable = "written by a newer mcpx-policy; an operator runs 'mcpx-policy writes' to see why"
	case errors.Is(err, ledger.ErrUnsafe):
		led.Unreadable = "not trusted: other users may write the state directory or a ledger file; an operator runs 'mcpx-policy writes' to see what to fix"
	case err != nil && e.ledgerCfg.Store == config.StorePostgres:
		led.Unreadable = "the ledger database does not answer or cannot be used; an operator runs 'mcpx-policy writes' with this gateway's --config files to see why (the deny's details spell it)"
	case err != nil:
		led.Unreadable = "corrupt or unreadable; an operator runs 'mcpx-policy writes' to see why"
	default:
		led.Entries, led.Total, led.Seen = p.Entries, p.Total, p.Seen
	}
	return led
}

// pinView is what the policy reads as input.tool.pin when the server pins
// tool definitions (config.Compiled.PinMode) — nil when pinning is off —
// and the call as the policy judges it (pins.CompareTool).
func (e *Engine) pinView(c *config.Compiled, call decision.Call) (*engine.Pin, decision.Call) {
	if c.PinMode(call.Server) == config.DefaultPinTools {
		return nil, call
	}
	check, tool := pins.CompareTool(e.pins.s, call.Server, call.Tool)
	call.Tool = tool
	return &engine.Pin{Status: check.Status, SHA256: check.SHA256, PinnedSHA256: check.PinnedSHA256,
		Changed: check.Changed, Error: check.Error}, call
}
