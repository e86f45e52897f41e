# METADATA
# title: Shadow mode
# description: |
#   A server in shadow mode (policy.enforce or the server's enforce set to
#   shadow) has every call decided as usual, and the decision is kept under
#   "shadow"; the call goes ahead as an allow unless one of its reasons is a
#   binding one: those hold in shadow mode too, since they are not a policy
#   being tried but the gate's own safety (docs/check-order.md#shadow-mode).
package mcpx.lib.shadow

# METADATA
# title: binding
# description: |
#   The reason codes shadow mode never relaxes: a hidden tool stays hidden,
#   a write whose outcome is unknown (or whose ledger cannot be read) still
#   blocks further writes, a malformed call is not run, a policy that could
#   not decide does not allow, and a tool whose definition changed from its
#   pin is not called.
binding := {
	"HiddenTool",
	"UnknownOutcomePending",
	"LedgerUnreadable",
	"InvalidInput",
	"PolicyError",
	"ToolDefinitionChanged",
}

# METADATA
# title: on
# description: |
#   Holds when server is in shadow mode: its own enforce, else the policy's.
#   Any value but "shadow" (a missing one included) enforces.
on(server) if _mode(server) == "shadow"

_mode(server) := m if {
	m := data.mcpx.config.servers[server].enforce
} else := data.mcpx.config.enforce

# METADATA
# title: document
# description: |
#   The decision d as a server in shadow mode answers it, with d's outcome,
#   step and reasons copied under "shadow" (the decision as it would be
#   enforced). An allow, and a decision whose deciding step has a binding
#   reason, stand as they are. Otherwise the relaxable reasons go: what
#   binding reasons remain can only be asks (a binding deny comes before
#   every relaxable one in the check order, so it would have decided), and
#   the call is an ask on them; with none, an allow with no reason.
#   Warnings, write, destructive and call are kept: the call runs, a write
#   is recorded in the ledger, ignored arguments get their rider.
document(d) := object.union(d, {"shadow": _would_be(d)}) if {
	_holds(d)
} else := object.union(d, {"outcome": "ask", "step": kept[0].step, "reasons": kept, "shadow": _would_be(d)}) if {
	kept := [r | some r in d.reasons; r.code in binding]
	count(kept) > 0
} else := object.union(d, {"outcome": "allow", "step": "", "reasons": [], "shadow": _would_be(d)})

_holds(d) if d.outcome == "allow"

_holds(d) if {
	some r in d.reasons
	r.code in binding
	r.step == d.step
}

_would_be(d) := {"outcome": d.outcome, "step": d.step, "reasons": d.reasons}
