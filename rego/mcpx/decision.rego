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
import data.mcpx.steps.destructive
import data.mcpx.steps.hidden
import data.mcpx.steps.ledger
import data.mcpx.steps.overrides
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

decision := _fail("InvalidInput", sprintf("invalid call: %s", [concat("; ", sort(req.problems))])) if count(req.problems) > 0

decision := _fail("PolicyError", sprintf("policy error: %s", [concat("; ", sort(_policy_problems))])) if {
	count(req.problems) == 0
	count(_policy_problems) > 0
}

decision := {
	"outcome": "deny",
	"step": "hidden",
	"reasons": [object.union(r, {"step": "hidden"}) | some r in hidden.deny],
	"warnings": [],
	"write": false,
	"destructive": false,
	"call": _call,
} if {
	_ready
	hidden.hidden
}

decision := {
	"outcome": _outcome,
	"step": _step,
	"reasons": _reasons,
	"warnings": [object.union(r, {"step": "unknown_args"}) | some r in unknown_args.warn],
	"write": call.write,
	"destructive": call.destructive,
	"call": _call,
} if {
	_ready
	not hidden.hidden
}

_ready if {
	count(req.problems) == 0
	count(_policy_problems) == 0
}

_policy_problems := ((config.problems | {sprintf("argument rule %s has no compiled package %s", [id, pkg]) |
	some pkg in rules.missing_packages
	some id, _ in rules.targets[pkg]
}) | {sprintf("argument rule %s is not in data.mcpx.config.rules with its compiled package, pointer and argument", [id]) | some id in rules.missing_rules}) | _facts_problems

# Every step reads the tool's facts; if they could not be computed the
# steps would see their defaults (not hidden, not a write, no rules), so
# that is a PolicyError, never a pass.
_facts_problems contains "the config's facts for this tool could not be computed" if not config.facts

_call := {"server": req.server, "tool": req.tool, "sha256": req.call_sha256}

# _steps lists each step's findings in the fixed check order.
_steps := [
	{"step": "ledger", "deny": ledger.deny, "ask": set()},
	{"step": "unknown_args", "deny": unknown_args.deny, "ask": set()},
	{"step": "argument_rules", "deny": rules.deny, "ask": set()},
	{"step": "write_mode", "deny": write_mode.deny, "ask": write_mode.ask},
	{"step": "destructive_floor", "deny": set(), "ask": destructive.ask},
	{"step": "overrides", "deny": overrides.deny, "ask": overrides.ask},
]

# _reasons keeps step order, and within a step its denies before its asks,
# so the first reason of the deciding step is the one that decided.
_reasons := [object.union(r, {"step": s.step}) |
	some s in _steps
	some findings in [s.deny, s.ask]
	some r in findings
]

_deny_steps := [s.step | some s in _steps; count(s.deny) > 0]

_ask_steps := [s.step | some s in _steps; count(s.ask) > 0]

default _outcome := "allow"

_outcome := "deny" if count(_deny_steps) > 0

_outcome := "ask" if {
	count(_deny_steps) == 0
	count(_ask_steps) > 0
}

default _step := ""

_step := _deny_steps[0] if count(_deny_steps) > 0

_step := _ask_steps[0] if {
	count(_deny_steps) == 0
	count(_ask_steps) > 0
}

_fail(code, message) := {
	"outcome": "deny",
	"step": "input",
	"reasons": [{"code": code, "step": "input", "message": message}],
	"warnings": [],
	"write": true,
	"destructive": true,
	"call": _call,
}
