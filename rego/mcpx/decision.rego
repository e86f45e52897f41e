# METADATA
# title: mcpx-policy decision
# description: |
#   The entrypoint. Runs the checks in their fixed order (docs/check-order.md)
#   and assembles the decision document (docs/sdk.md#types): the outcome is the
#   first deny in step order, else ask if any step asked, else allow. Every
#   finding is kept as a reason; only a hidden tool short-circuits. Malformed
#   input is an InvalidInput deny and an unusable config a PolicyError deny;
#   the default decision is a PolicyError deny, so an undefined result can
#   never read as an allow.
package mcpx

import data.mcpx.codes
import data.mcpx.lib.call
import data.mcpx.lib.config
import data.mcpx.lib.plan
import data.mcpx.lib.predicates
import data.mcpx.lib.req
import data.mcpx.lib.shadow
import data.mcpx.lib.tool
import data.mcpx.steps.budget
import data.mcpx.steps.destructive
import data.mcpx.steps.flow
import data.mcpx.steps.hidden
import data.mcpx.steps.ledger
import data.mcpx.steps.overrides
import data.mcpx.steps.pin
import data.mcpx.steps.rules
import data.mcpx.steps.unknown_args
import data.mcpx.steps.write_mode

# METADATA
# title: decision
# description: The decision document for input (docs/check-order.md).
# entrypoint: true
default decision := {
	"outcome": "deny",
	"step": "input",
	"reasons": [{
		# literal, not from data.mcpx.codes: the floor holds when data is
		# missing (TestRegoReasonCodesAreTheGoTable checks the spelling)
		"code": "PolicyError",
		"step": "input",
		"message": "the policy produced no decision for this call; denied (fail closed)",
	}],
	"warnings": [],
	"write": true,
	"destructive": true,
	"call": {"server": "", "tool": ""},
}

# The common case first (common_decision): a well-formed call to a visible
# tool the config can decide, whose definition is the pinned one (or is not
# pinned), with nothing in the ledger, no unknown argument, arguments every
# matched rule accepts and no override finding, is decided by its planned
# document (lib.plan: the write-mode and destructive-floor reasons, rendered
# once per tool, and shadow mode applied). Any other call is decided by
# uncommon_decision. Should no document result, the default above denies.
decision := common_decision if {
	common_decision
} else := uncommon_decision

# METADATA
# title: common_decision
# description: |
#   The decision of a call in the common case, or of a call to a hidden
#   tool: its planned document (common_document) and the call. Undefined
#   for any other call.
common_decision := object.union(common_document, {"call": {"server": input.server, "tool": input.tool.name, "sha256": object.get(input, "call_sha256", "")}})

# METADATA
# title: common_document
# description: |
#   The decision of a call in the common case less its call, in one body:
#   the tool's planned document (lib.plan.common), the same value for
#   every such call, or a hidden tool's (lib.plan.hidden_common);
#   undefined for any other call. It reads the call's
#   names, mode, annotations, pin and ledger, and asks
#   lib.predicates.common_case about the arguments, so the embedded engine
#   can ask it before it converts the arguments, and adds the call itself.
common_document := p.document if {
	is_string(input.server) # the facts take names only
	is_string(input.tool.name)
	p := plan.common(
		input.server,
		input.tool.name,
		object.get(input, "mode", null),
		object.get(input.tool, ["annotations", "readOnlyHint"], false),
		object.get(input.tool, ["annotations", "destructiveHint"], true),
	)
	_pin_passes(p.pin_mode)
	predicates.common_case

	# regal ignore:superfluous-object-get
	object.get(input, "ledger", {"entries": [], "total": 0}) == {"entries": [], "total": 0}
} else := p.document if {
	# a hidden tool: its planned document (lib.plan.hidden_common), when
	# the input is well formed and its pin passes (then the pin step has no
	# problem); nothing else is evaluated or reported
	is_string(input.server)
	is_string(input.tool.name)
	p := plan.hidden_common(input.server, input.tool.name)
	_pin_passes(p.pin_mode)
	predicates.well_formed
}

# METADATA
# title: common_or_planned
# description: |
#   What the embedded engine asks first, before it converts the call's
#   arguments, so that a call decided over its plan takes one evaluation:
#   common_document when the common case decides the call (a decision
#   document has no "planned" key);
#   else, for a call whose only findings can be unknown arguments and
#   argument rules (well formed, to a visible tool the config can decide,
#   its pin passing, nothing in the ledger, no override finding: the calls
#   uncommon_decision decides over their planned document),
#   {"planned": that document, "facts": the tool's facts, "shadow": whether
#   the server is in shadow mode}. The engine builds such a call's findings
#   in Go where a test proves them the Rego's, and otherwise asks
#   uncommon_decision. Undefined for any other call. The decision never
#   reads it: a stock OPA does not evaluate it.
common_or_planned := d if {
	d := common_document
} else := {"planned": d, "facts": facts, "shadow": _shadow_on} if {
	d := _planned # regal ignore:pointless-reassignment
	predicates.well_formed
	_pin_passes(pin.mode_of(input.server))

	# regal ignore:superfluous-object-get
	object.get(input, "ledger", {"entries": [], "total": 0}) == {"entries": [], "total": 0}
	count([f | some f in data.mcpx.overrides.deny]) == 0
	count([f | some f in data.mcpx.overrides.ask]) == 0
	facts := tool.facts(input.server, input.tool.name)
}

_shadow_on if shadow.on(input.server)

else := false

# _pin_passes holds when the pin step finds nothing and has no problem:
# pinning is off for the server, or on and the caller found the tool's
# definition the pinned one or new (first sight passes).
_pin_passes(mode) if mode == "off"

else if {
	mode in {"ask", "deny"}
	input.tool.pin.status in {"ok", "new"}
}

# METADATA
# title: uncommon_decision
# description: |
#   The decision of any call the common case does not decide, with shadow
#   mode applied (lib.shadow) when the call's server is in it.
uncommon_decision := shadow.document(d) if {
	# _uncommon before shadow.on, not the other way round: measured, the
	# order Regal suggests costs ~8 more allocations per decision on the M
	# workload (BenchmarkDecide).
	# regal ignore:defer-assignment,pointless-reassignment
	d := _uncommon
	shadow.on(input.server)
} else := _uncommon

# _uncommon is the decision of any call, before shadow mode: first, over
# the planned document, a call whose only findings are unknown arguments or
# argument rules (only those steps build reasons); then a hidden tool's
# planned document; else the full check order (_full), which builds every
# reason. The planned documents equal what the full order produces
# (lib/plan_test.rego, test_planned_paths_equal_the_full_order), and each
# predicate (lib.predicates) holds only when its step finds nothing.
_uncommon := {
	"outcome": verdict[0],
	"step": verdict[1],
	"reasons": array.flatten([ua.deny, ar, d.reasons]),
	"warnings": array.concat(ua.warn, d.warnings),
	"write": d.write,
	"destructive": d.destructive,
	"call": _input_call,
} if {
	# (each rule read once into a variable: a second reference to a rule
	# costs a lookup, measured in allocations per decision)
	d := _planned # regal ignore:pointless-reassignment
	predicates.well_formed
	_pin_passes(pin.mode_of(input.server)) # pin.mode, without building req.doc

	# regal ignore:superfluous-object-get
	object.get(input, "ledger", {"entries": [], "total": 0}) == {"entries": [], "total": 0}
	count([f | some f in data.mcpx.overrides.deny]) == 0 # no override finding (cheaper than the step)
	count([f | some f in data.mcpx.overrides.ask]) == 0
	ua := _unknown_args_findings # regal ignore:pointless-reassignment
	ar := _rules_findings # regal ignore:pointless-reassignment
	verdict := _planned_verdict(ua.deny, ar, d)
} else := object.union(d, {"call": _input_call}) if {
	is_string(input.server)
	is_string(input.tool.name)
	d := plan.hidden_document(input.server, input.tool.name)
	predicates.well_formed
	count(pin.problems) == 0
	count(pin.config_problems) == 0
} else := _full

# _planned is the call's planned document (lib.plan.document).
_planned := plan.document(
	input.server,
	input.tool.name,
	object.get(input, "mode", null),
	object.get(input.tool, ["annotations", "readOnlyHint"], false),
	object.get(input.tool, ["annotations", "destructiveHint"], true),
) if {
	is_string(input.server)
	is_string(input.tool.name)
}

# _unknown_args_findings are the unknown-arguments step's denies and
# warnings, as lists: none when its predicate holds.
_unknown_args_findings := {"deny": [], "warn": []} if {
	predicates.no_unknown_args
} else := {"deny": [r | some r in unknown_args.deny], "warn": [r | some r in unknown_args.warn]}

# _rules_findings are the argument-rules step's denies: none when its
# predicate holds; undefined when the step has problems (a PolicyError,
# which the full order decides).
_rules_findings := [] if {
	predicates.rules_accept
} else := [r | some r in rules.deny] if {
	count(rules.problems) == 0
}

# _planned_verdict is the first deny's step (unknown arguments, then
# argument rules, then the planned document's), else the planned one.
_planned_verdict(unknown_denies, rule_denies, d) := ["deny", "unknown_args"] if {
	count(unknown_denies) > 0
} else := ["deny", "argument_rules"] if {
	count(rule_denies) > 0
} else := [d.outcome, d.step]

# _input_call is the decision's call for a well-formed input.
_input_call := {"server": input.server, "tool": input.tool.name, "sha256": object.get(input, "call_sha256", "")}

# _full is the decision by the full check order: a valid call to a visible
# tool whose rules are usable is decided by the steps' findings; otherwise
# the first that applies decides: invalid input, an unusable config, a
# hidden tool (nothing else is evaluated or reported), unusable rules.
_full := {
	"outcome": _verdict.outcome,
	"step": _verdict.step,
	"reasons": _reasons,
	"warnings": array.concat([r | some r in unknown_args.warn], config.loosened_warnings(req.doc.server)),
	"write": call.write,
	"destructive": call.destructive,
	"call": _call,
} if {
	count(_input_problems) == 0
	count(_config_problems) == 0
	not hidden.applies
	count(rules.problems) == 0
} else := _fail(codes.InvalidInput, sprintf("invalid call: %s", [concat("; ", sort(_input_problems))])) if {
	count(_input_problems) > 0
} else := _fail(codes.PolicyError, sprintf("policy error: %s", [concat("; ", sort(_config_problems))])) if {
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
	hidden.applies
} else := _fail(codes.PolicyError, sprintf("policy error: %s", [concat("; ", sort(rules.problems))])) if {
	count(rules.problems) > 0
}

# _config_problems make the config unusable for this call (no config, an
# unknown mode the call would be decided by): a PolicyError before anything
# else is decided. Every step reads the tool's facts; if they could not be
# computed the steps would see their defaults (not hidden, not a write, no
# rules), so that is a PolicyError too, never a pass.
_config_problems := ((config.problems | call.config_problems) | pin.config_problems) | {
"the config's facts for this tool could not be computed" | not call.facts}

# _input_problems make the input malformed: the call's, and with pinning on
# its pin's.
_input_problems := req.problems | pin.problems

_call := {"server": req.doc.server, "tool": req.doc.tool, "sha256": req.doc.call_sha256}

# _reasons keeps the check order, and within a step its denies before its
# asks, so the first reason of the deciding step is the one that decided.
# Each step's findings name their step.
_reasons := [r |
	some findings in [
		pin.deny, pin.ask, ledger.deny, budget.deny, flow.deny, flow.ask, unknown_args.deny, rules.deny,
		write_mode.deny, write_mode.ask, destructive.ask, overrides.deny, overrides.ask,
	]
	some r in findings
]

# _denies are the deny reasons, in check order.
_denies := [r |
	some findings in [pin.deny, ledger.deny, budget.deny, flow.deny, unknown_args.deny, rules.deny, write_mode.deny, overrides.deny]
	some r in findings
]

# _verdict is the first deny's step, else (every reason being an ask) the
# first ask's, else allow.
default _verdict := {"outcome": "allow", "step": ""}

_verdict := {"outcome": "deny", "step": _denies[0].step} if {
	count(_denies) > 0
} else := {"outcome": "ask", "step": _reasons[0].step} if {
	count(_reasons) > 0
}

# _fail is the decision that denies the call with one reason of code (an
# entry of data.mcpx.codes): invalid input or a policy error.
_fail(code, message) := {
	"outcome": "deny",
	"step": "input",
	"reasons": [{"code": code.code, "step": code.step, "message": message}],
	"warnings": [],
	"write": true,
	"destructive": true,
	"call": _call,
}
