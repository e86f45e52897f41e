# METADATA
# title: Step 4 — argument rules
# description: |
#   Every argument rule whose tool patterns match the call (pool and server,
#   looked up by exact name or by the compiled globs and regexes) must accept
#   the arguments. Each rule's schema is a generated package
#   data.mcpx.rules.<name> (ADR 0001) that reads targets[<name>] and yields
#   violations; this step names the rule, cuts and redacts values and fails
#   closed when a matched rule's package is missing.
package mcpx.steps.rules

import data.mcpx.codes
import data.mcpx.lib.call
import data.mcpx.lib.predicates
import data.mcpx.lib.req
import data.mcpx.lib.text

# matched is the set of ids of the rules that apply to the call.
matched := call.facts.matched

# targets[package][rule id] is the value a rule's schema checks and the JSON
# Pointer it sits at; a per-argument rule whose argument is absent has none.
# A rule's paths are its pointer's readings for object.get: a token of
# digits is an array index or an object key, as the arguments hold an array
# or an object there (RFC 6901), so the loader compiles both; JSON objects
# have only string keys and arrays only number indexes, so at most one
# reading finds a value.
# One package's targets are built when a generated package (or this step)
# looks them up, once per call; a package the rules predicate vouches for
# is never looked up (its targets cannot fail). The matched rules come
# grouped by package with their compiled pointers from the tool's facts
# (memoized), so per call only the arguments are read; presence is tested
# inline (a function call costs OPA ~40 allocations).
targets[pkg] := by_rule if {
	some pkg, rules in call.facts.packages
	by_rule := {r.id: {"value": v, "path": r.pointer} |
		some r in rules
		some path in r.paths
		v := object.get(req.call.args, path, _absent)
		v != _absent
	}
	count(by_rule) > 0
}

# _absent stands for an argument that is not there: a set, which no JSON
# value (and so no argument) can be.
_absent := {"absent"}

_present(args, paths) if {
	some path in paths
	object.get(args, path, _absent) != _absent
}

# problems make this step unusable for the call, and the call a
# PolicyError, never a pass: a matched rule whose generated package the
# policy does not hold (a broken bundle) or whose compiled entry is
# incomplete, or a rule that reported violations without becoming a reason.
problems := ({sprintf("argument rule %s has no compiled package %s", [id, pkg]) |
	some pkg in _unvouched # package_accepts holds only for a package the policy has
	by_rule := targets[pkg]
	not data.mcpx.rules[pkg].violations
	some id, _ in by_rule
} | {sprintf("argument rule %s is not in data.mcpx.config.rules with its compiled package, pointer and paths", [id]) |
	some id in call.facts.missing_rules
}) | {"argument rules reported violations that did not become reasons" | count(_violations) != count(deny)}

# _unvouched are the matched packages the rules predicate does not vouch
# for (lib.predicates.accepting_packages: all their targets valid, so no
# violation): only these are evaluated. (One set asked once, not a
# function call per package.)
_unvouched contains pkg if {
	some pkg, _ in call.facts.packages
	not pkg in predicates.accepting_packages
}

_violations[id] := vs if {
	some pkg in _unvouched
	some id, vs in data.mcpx.rules[pkg].violations
	count(vs) > 0
}

_violations[r.id] := [{"path": r.pointer, "value": null, "constraint": "required", "expected": true}] if {
	some r in call.facts.required
	not _present(req.call.args, r.paths)
}

# METADATA
# custom:
#   code: ArgumentRuleViolation
deny contains {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s: %s (rule %s, %s)", [call.label, concat("; ", [r.phrase | some r in rendered]), id, ref.origin]),
	"violations": vs,
} if {
	c := codes.ArgumentRuleViolation # one read of the data, not two
	some id, raw in _violations
	ref := _rule_ref(id)
	rendered := [_render(_normal(v), id) | some v in raw]
	vs := [r.violation | some r in rendered]
}

# _args_plain is whether no structure of the call's arguments names a
# secret (lib.predicates.plain_args): then a violation's value is judged by
# itself and its path's names (text.show_at). Asked once per call, when a
# violation is shown.
default _args_plain := false

_args_plain if predicates.plain_args(req.call.args)

# METADATA
# description: A rule's reference in its violations (the config's alone).
# custom:
#   memo: true
_rule_ref(id) := {
	"id": id,
	"origin": object.get(data.mcpx.config.rules[id], "origin", "?"),
	"description": object.get(data.mcpx.config.rules[id], "description", ""),
}

# _normal gives a generated violation every field the message needs.
# (Functions of several exclusive cases are else-chains here: OPA stops at
# the case that holds instead of trying every one.)
_normal(v) := object.union(
	{"path": "", "value": null, "constraint": "unknown", "expected": null},
	{k: x | some k, x in v; k in {"path", "value", "constraint", "expected", "detail"}},
) if is_object(v)

else := {"path": "", "value": v, "constraint": "unknown", "expected": null}

# _render is _violation(v, _rule_ref(id)) and its _phrase, from the
# violation's template (everything but its value: a function of the config
# and the rule's schema alone, which the embedded engine keeps per rule and
# schema location) and its value, redacted and cut as _violation does
# (test_rendered_violations_equal_the_steps).
_render(v, id) := {
	"violation": object.union(t.violation, {"value": value}),
	"phrase": sprintf("%s %s %s", [t.where, _value_text(value), t.constraint]),
} if {
	t := _template(id, v.path, v.constraint, v.expected, object.filter(v, {"detail"}))
	not t.silent
	value := text.show_at(req.call.args, _args_plain, v.path, t.key, v.value)
} else := {
	"violation": object.union(t.violation, {"value": text.show_at(req.call.args, _args_plain, v.path, t.key, v.value)}),
	"phrase": sprintf("%s %s", [t.where, t.constraint]),
} if {
	t := _template(id, v.path, v.constraint, v.expected, object.filter(v, {"detail"}))
}

# METADATA
# description: |
#   A violation's template: what _violation and _phrase make of a
#   normalized violation of rule id at path, less its value (detail is the
#   violation's "detail" field as an object, {} when it has none). A pure
#   function of the config and of what the rule's schema reports, so the
#   embedded engine keeps it (custom memo, ADR 0005); a stock OPA computes
#   it once per violation.
# custom:
#   memo: true
_template(id, path, constraint, expected, detail) := {
	"violation": v,
	"key": _last_key(path),
	"silent": _silent(constraint),
	"where": _where(v.path),
	"constraint": _constraint(v),
} if {
	v := _violation(object.union({"path": path, "value": null, "constraint": constraint, "expected": expected}, detail), _rule_ref(id))
}

_silent(c) if _silent_value(c)

else := false

# _violation is a violation as it may be echoed: the value redacted, then
# cut (text.show, judged by the key it sits under); secret-shaped keys in
# the path, and secrets in the expected value and the detail, redacted.
_violation(v, ref) := object.union_n([
	v,
	{
		"path": text.redact_pointer(v.path),
		"value": text.show(_last_key(v.path), v.value),
		"expected": text.echo("", v.expected),
		"rule": ref,
	},
	{"detail": text.redact(d) | d := v.detail; is_string(d)},
])

_last_key(ptr) := text.unescape(parts[count(parts) - 1]) if {
	parts := split(ptr, "/")
	count(parts) > 1
} else := "" if {
	ptr == ""
}

_phrase(v) := sprintf("%s %s", [_where(v.path), _constraint(v)]) if {
	_silent_value(v.constraint)
} else := sprintf("%s %s %s", [_where(v.path), _value_text(v.value), _constraint(v)])

_where(p) := "arguments" if p == ""

else := p

_value_text(v) := json.marshal(v)

_silent_value(c) if c in {"required", "additionalProperties", "minProperties", "maxProperties", "dependentRequired", "propertyNames", "false"}

_constraint(v) := sprintf("%s%s", [_base(v), _detail(v)])

_detail(v) := sprintf(" (%s)", [v.detail]) if is_string(object.get(v, "detail", null))

else := ""

_templates := {
	"type": "is not of type %s",
	"enum": "is not one of %s",
	"const": "is not %s",
	"pattern": "does not match %s",
	"minLength": "is shorter than %s characters",
	"maxLength": "is longer than %s characters",
	"minimum": "is less than %s",
	"maximum": "is greater than %s",
	"exclusiveMinimum": "is not greater than %s",
	"exclusiveMaximum": "is not less than %s",
	"multipleOf": "is not a multiple of %s",
	"minItems": "has fewer than %s items",
	"maxItems": "has more than %s items",
	"uniqueItems": "has duplicate items",
	"contains": "has no item that matches its contains schema",
	"minContains": "has fewer than %s items that match its contains schema",
	"maxContains": "has more than %s items that match its contains schema",
	"minProperties": "has fewer than %s properties",
	"maxProperties": "has more than %s properties",
	"additionalProperties": "is not allowed",
	"propertyNames": "has a property name that is not allowed",
	"dependentRequired": "lacks properties %s",
	"anyOf": "matches none of the anyOf schemas",
	"oneOf": "does not match exactly one of the oneOf schemas",
	"not": "matches a schema it must not match",
	"pathWithin": "is not a path inside %s",
	"urlWithin": "is not a URL allowed by %s",
	"false": "is not allowed (false schema)",
}

_base(v) := sprintf(t, [_expected_text(v.expected)]) if {
	t := _templates[v.constraint] # "required" has none
	contains(t, "%s") # each template has one %s or none
} else := _templates[v.constraint] if {
	_ = _templates[v.constraint]
} else := "is missing" if {
	v.constraint == "required"
	v.expected == true
} else := sprintf("lacks required properties %s", [json.marshal(v.expected)]) if {
	v.constraint == "required"
} else := sprintf("fails %s %s", [v.constraint, json.marshal(v.expected)])

_expected_text(e) := e if is_string(e)

else := json.marshal(e)
