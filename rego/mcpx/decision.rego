# METADATA
# title: mcpx-policy decision
# description: |
#   The entrypoint. Runs the seven checks of SPEC §1.1 in their fixed order
#   and assembles the decision document of SPEC §1.3: the outcome is the
#   first deny in step order, else ask if any step asked, else allow. Every
#   finding is kept as a reason; only a hidden tool short-circuits. Malformed
#   input is an InvalidInput deny and an unusable config a PolicyError deny;
#   the default decision is a PolicyError deny, so an undefined result can
#   never read as an allow.
package mcpx

import data.mcpx.lib.call
import data.mcpx.lib.config
import data.mcpx.lib.req
import data.mcpx.lib.shadow
import data.mcpx.steps.destructive
import data.mcpx.steps.hidden
import data.mcpx.steps.ledger
import data.mcpx.steps.overrides
import data.mcpx.steps.pin
import data.mcpx.steps.rules
import data.mcpx.steps.unknown_args
import data.mcpx.steps.write_mode

# METADATA
# title: decision
# description: The decision document for input (SPEC §1.3).
# entrypoint: true
default decision := {
	"outcome": "deny",
	"step": "input",
	"reasons": [{
		"code": "PolicyError",
		"step": "input",
		"message": "the policy produced no decision for this call; denied (fail closed)",
	}],
	"warnings": [],
	"write": true,
	"destructive": true,
	"call": {"server": "", "tool": ""},
}

# A server in shadow mode answers with its decision kept under "shadow"
# and, unless a reason is binding, an allow (lib.shadow). Should no
# document result, the default above denies.
decision := shadow.document(d) if {
	d := _decision
	shadow.on(input.server)
} else := _decision

# The common case first: a valid call to a visible tool whose rules are
# usable is decided by the steps' findings. Otherwise the first that
# applies decides: invalid input, an unusable config, a hidden tool
# (nothing else is evaluated or reported), unusable rules.
_decision := {
	"outcome": _verdict.outcome,
	"step": _verdict.step,
	"reasons": _reasons,
	"warnings": [r | some r in unknown_args.warn],
	"write": call.write,
	"destructive": call.destructive,
	"call": _call,
} if {
	count(_input_problems) == 0
	count(_config_problems) == 0
	not hidden.hidden
	count(rules.problems) == 0
} else := _fail("InvalidInput", sprintf("invalid call: %s", [concat("; ", sort(_input_problems))])) if {
	count(_input_problems) > 0
} else := _fail("PolicyError", sprintf("policy error: %s", [concat("; ", sort(_config_problems))])) if {
	count(_config_problems) > 0
} else := {
	"outcome": "deny",
	"step": "hidden",
	"reasons": [r | some r in hidden.deny],
	"warnings": [],
	"write": false,
	"destructive": false,
	"call": _call,
} if {
	hidden.hidden
} else := _fail("PolicyError", sprintf("policy error: %s", [concat("; ", sort(rules.problems))])) if {
	count(rules.problems) > 0
}

# _config_problems make the config unusable for this call (no config, an
# unknown mode the call would be decided by): a PolicyError before anything
# else is decided. Every step reads the tool's facts; if they could not be
# computed the steps would see their defaults (not hidden, not a write, no
# rules), so that is a PolicyError too, never a pass.
_config_problems := (config.problems | pin.config_problems) | {"the config's facts for this tool could not be computed" | not config.facts}

# _input_problems make the input malformed: the call's, and with pinning on
# its pin's.
_input_problems := req.problems | pin.problems

_call := {"server": req.doc.server, "tool": req.doc.tool, "sha256": req.doc.call_sha256}

# _reasons keeps the check order, and within a step its denies before its
# asks, so the first reason of the deciding step is the one that decided.
# Each step's findings name their step.
_reasons := [r |
	some findings in [pin.deny, pin.ask, ledger.deny, unknown_args.deny, rules.deny, write_mode.deny, write_mode.ask, destructive.ask, overrides.deny, overrides.ask]
	some r in findings
]

# _denies are the deny reasons, in check order.
_denies := [r |
	some findings in [pin.deny, ledger.deny, unknown_args.deny, rules.deny, write_mode.deny, overrides.deny]
	some r in findings
]

# _verdict is the first deny's step, else (every reason being an ask) the
# first ask's, else allow.
_verdict := {"outcome": "deny", "step": _denies[0].step} if {
	count(_denies) > 0
} else := {"outcome": "ask", "step": _reasons[0].step} if {
	count(_reasons) > 0
} else := {"outcome": "allow", "step": ""}

_fail(code, message) := {
	"outcome": "deny",
	"step": "input",
	"reasons": [{"code": code, "step": "input", "message": message}],
	"warnings": [],
	"write": true,
	"destructive": true,
	"call": _call,
}
