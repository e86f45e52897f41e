# METADATA
# title: Engine-only predicates
# description: |
#   The yes/no questions the decision asks before it takes its common path
#   (mcpx.decision), each defined here in plain Rego: the input is well
#   formed, no argument is unknown, every matched argument rule accepts the
#   arguments; and, for the steps that echo values, one generated package
#   accepts all its targets, a text has no secret-shaped part, a value is
#   echoed as it is. The embedded engine may replace this module, whole, by one
#   whose rules ask Go builtins instead (internal/engine/predicates.go,
#   docs/decisions/0009-engine-only-predicates.md). A builtin may only be
#   stricter than the rule it replaces: when it says no, the decision's full
#   path decides, and every reason is built in Rego either way. A bundle on
#   stock OPA and opa test use this module as written.
package mcpx.lib.predicates

import data.mcpx.lib.call
import data.mcpx.lib.req
import data.mcpx.lib.text
import data.mcpx.steps.rules
import data.mcpx.steps.unknown_args

# well_formed holds when the input is a well-formed call: every field is
# present and valid or absent, as the engine builds it (lib.req's well_shaped,
# so each can be read from the input directly), and the input checks find
# no problem (InvalidInput would not be the decision).
well_formed if {
	req.well_shaped
	count(req.problems) == 0
}

# no_unknown_args holds when the unknown-arguments step finds nothing to
# deny or warn about.
no_unknown_args if {
	count(unknown_args.deny) == 0
	count(unknown_args.warn) == 0
}

# nested_keys_known holds when no nested object of the arguments has an
# unknown key (the unknown-arguments step walks into them only when it
# does not hold).
nested_keys_known if count(unknown_args.nested) == 0

# rules_accept holds when the argument-rules step finds nothing: every
# matched rule accepts the arguments, every required argument is there, and
# every matched rule is usable (compiled, with its package).
rules_accept if {
	count(rules.problems) == 0
	count(rules.deny) == 0
}

# common_case holds when everything the decision's common case asks of the
# arguments and the overrides holds: the input is well formed, no argument
# is unknown, every matched rule accepts the arguments, and no override
# finds anything (the embedded engine answers the first three in one call).
common_case if {
	well_formed
	no_unknown_args
	rules_accept
	count([f | some f in data.mcpx.overrides.deny]) == 0
	count([f | some f in data.mcpx.overrides.ask]) == 0
}

# package_accepts holds when the generated rule package pkg finds no
# violation in any of its targets (the argument-rules step evaluates only
# the packages it does not hold for).
package_accepts(pkg) if {
	every _, vs in data.mcpx.rules[pkg].violations {
		count(vs) == 0
	}
}

# accepting_packages are the call's matched generated packages for which
# package_accepts holds, as one set (the argument-rules step evaluates the
# others). A complete rule, as the engine's form of it is (ADR 0010).
# regal ignore:prefer-set-or-object-rule
accepting_packages := {pkg | some pkg, _ in call.facts.packages; package_accepts(pkg)}

# plain_text holds when s has no secret-shaped part to look for: the secret
# table is loaded and nothing in it matches s (lib.text._suspect does not
# hold).
plain_text(s) if text.shapeless(s)

# plain_value holds when v, found under key, is echoed as it is: redaction
# (lib.text.value, with no other secret known) leaves it unchanged.
plain_value(key, v) if text.value(key, v, set()) == v

# plain_args holds when no structure of a call's arguments names a secret:
# no object has a name field naming one beside another member, no array
# element follows one that names it, and no array's command line holds a
# secret shape (lib.text._named_roots and _ctx_finds find nothing). A
# violation's value is then judged by itself (lib.text.show_at).
plain_args(args) if {
	count(text._named_roots(args)) == 0
	count(text._ctx_finds(args)) == 0
}
