# METADATA
# title: Per-tool facts
# description: |
#   What the compiled config says about one tool of one server, from data
#   alone: whether it is hidden or a write by pattern, which argument rules
#   apply (grouped by package, and those that require their argument), its
#   configured write and unknown-arguments modes, the exempt keys, and the
#   problems that make the config unusable for it (an unknown mode). A
#   function of (server, tool name) only, so the embedded engine memoizes it
#   (custom memo, ADR 0005): a tool's facts are computed on its first call
#   and looked up after that. Stock OPA and opa test compute them per query,
#   with the same result.
package mcpx.lib.tool

import data.mcpx.lib.config
import data.mcpx.lib.patterns

# METADATA
# title: facts
# description: The config's facts about tool on server.
# custom:
#   memo: true
facts(server, tool) := {
	"hidden": _matches("hidden", s, tool),
	"write": _matches("writeTools", s, tool),
	"matched": matched,
	"packages": {rule.package: [{"id": id, "paths": r.paths, "pointer": r.pointer} |
		some id in matched
		r := data.mcpx.config.rules[id]
		r.package == rule.package
	] |
		some id in matched
		rule := data.mcpx.config.rules[id]
	},
	"required": [{"id": id, "paths": r.paths, "pointer": r.pointer} |
		some id in matched
		r := data.mcpx.config.rules[id]
		r.required == true
	],
	"missing_rules": {id | some id in matched; not _compiled(id)},
	"budgets": (patterns.values(object.get(config.pool, "budgets", {}), tool) | patterns.values(object.get(s, "budgets", {}), tool)),
	"labels": (patterns.values(object.get(config.pool, ["labels", "tools"], {}), tool) | patterns.values(object.get(s, ["labels", "tools"], {}), tool)),
	"open_world_labels": ({l | some l in object.get(config.pool, ["labels", "openWorld"], [])} | {l | some l in object.get(s, ["labels", "openWorld"], [])}),
	"flow_judged": _flow_judged(server, tool, s),
	"write_mode": write_mode,
	"unknown_args_mode": unknown_args_mode,
	"exempt": ({k | some k in object.get(config.global, "exemptArgs", [])} | {k | some k in object.get(s, "exemptArgs", [])}),
	"problems": ({sprintf("write mode %s is not ask, allow or deny", [json.marshal(write_mode)]) |
		not config.vocab.write[write_mode]
	} | {sprintf("unknownArgs mode %s is not warn, reject or off", [json.marshal(unknown_args_mode)]) |
		not config.vocab.unknownArgs[unknown_args_mode]
	}),
} if {
	s := object.get(object.get(config.global, "servers", {}), server, {})
	matched := patterns.values(object.get(config.pool, "rules", {}), tool) | patterns.values(object.get(s, "rules", {}), tool)
	write_mode := _first_set([object.get(s, "write", null), object.get(config.global, "write", null), config.vocab.defaults.write])
	unknown_args_mode := _first_set([
		_last_match(object.get(s, "unknownArgsTools", []), tool),
		_last_match(object.get(config.pool, "unknownArgsTools", []), tool),
		object.get(s, "unknownArgs", null),
		object.get(config.global, "unknownArgs", null),
		config.vocab.defaults.unknownArgs,
	])
}

# _compiled holds for a rule with the fields the rules step reads; a matched
# rule without them is a missing rule (a PolicyError), never skipped.
# (It reads data.mcpx.config.rules itself: passed as an argument, the whole
# rules object is read out of the store on every call by a stock OPA.)
_compiled(id) if {
	r := data.mcpx.config.rules[id]
	is_string(r.package)
	is_string(r.pointer)
	is_array(r.paths)
	count(r.paths) > 0
	every path in r.paths {
		is_array(path)
	}
}

_matches(key, s, name) if {
	patterns.matches(object.get(config.pool, key, {}), name)
} else if {
	patterns.matches(object.get(s, key, {}), name)
} else := false

# Within an unknownArgsTools list the last match wins.
_last_match(entries, name) := m if {
	modes := [e.mode | some e in entries; regex.match(e.re, name)]
	count(modes) > 0
	m := modes[count(modes) - 1]
} else := null

_first_set(candidates) := [c | some c in candidates; c != null][0]

# METADATA
# title: schema_facts
# description: |
#   What an inputSchema declares, for the unknown-arguments shortcut: for a
#   plain closed schema (an object with a properties object, no
#   patternProperties, $ref or allOf/anyOf/oneOf, additionalProperties absent
#   or false): its declared keys, the properties with no "properties" key
#   anywhere below them (free), and for properties whose own schema is plain,
#   that schema's declared keys (nested). Undefined for any other schema. A function of
#   the schema alone, memoized by the embedded engine like facts.
# custom:
#   memo: true
schema_facts(s) := {
	"declared": object.keys(props),
	"free": {k | some k, sub in props; _nested_fact(sub) == "free"},
	"nested": {k: d | some k, sub in props; d := _nested_fact(sub); is_set(d)},
} if {
	props := plain_properties(s)
}

# plain_properties is the properties object of a plain closed schema.
plain_properties(s) := s.properties if {
	is_object(s)
	object.get(s, "additionalProperties", false) == false
	count({"patternProperties", "$ref", "allOf", "anyOf", "oneOf"} & object.keys(s)) == 0
	is_object(s.properties)
}

_nested_fact(sub) := "free" if {
	not contains(json.marshal(sub), `"properties"`)
} else := object.keys(plain_properties(sub)) if {
	plain_properties(sub)
} else := "check"

# _flow_judged holds when a flow rule of the pool or of server may judge a
# call to tool: one of its calls labels is given to tool by pattern, or to
# every open-world tool (whatever tool's hint: the facts see no
# annotations). Such a call leaves the common path (lib.plan.document).
default _flow_judged(_, _, _) := false

_flow_judged(server, tool, s) if {
	some r in object.get(config.global, "flows", {})
	r.server in {"", server}
	some l in r.calls
	l in (((patterns.values(object.get(config.pool, ["labels", "tools"], {}), tool) | patterns.values(object.get(s, ["labels", "tools"], {}), tool)) | {x | some x in object.get(config.pool, ["labels", "openWorld"], [])}) | {x | some x in object.get(s, ["labels", "openWorld"], [])})
}
