# METADATA
# title: Step 3 — unknown arguments
# description: |
#   Argument keys the tool's inputSchema does not declare, at the top level
#   and inside nested objects whose schema declares properties. A schema is
#   open (nothing is unknown) when additionalProperties is true or a schema,
#   or patternProperties is present, or it is a $ref; additionalProperties
#   unset counts as closed. Mode reject denies, warn adds a warning, off
#   skips. exemptArgs are never reported.
package mcpx.steps.unknown_args

import data.mcpx.codes
import data.mcpx.lib.call
import data.mcpx.lib.predicates
import data.mcpx.lib.req
import data.mcpx.lib.text
import data.mcpx.lib.tool

# max_echo is how many unknown keys a message names.
max_echo := 5

# unknown lists the unknown keys as {"path", "parent", "key"}, sorted by path.
unknown := [] if _none

else := sort([u | some u in _unknown])

# _none is a shortcut for the common call with no unknown key: no schema, or
# a plain closed schema (no patternProperties, $ref or allOf/anyOf/oneOf;
# additionalProperties absent or false) that declares every top-level key
# (or the key is exempt), where each value is a scalar, a container whose
# schema has no "properties" key anywhere below, or an object of scalars
# whose own plain schema declares each of its keys. When it holds, the full
# rules below find nothing; when it does not, they decide.
_none if not req.call.has_schema

_none if {
	f := tool.schema_facts(req.call.schema)
	count((object.keys(req.call.args) - f.declared) - call.facts.exempt) == 0
	every k in {k | some k, v in req.call.args; type_name(v) in {"object", "array"}} - f.free {
		v := req.call.args[k]
		is_object(v)
		count(object.keys(v) - f.nested[k]) == 0
		every x in v {
			type_name(x) in _scalars
		}
	}
}

_scalars := {"string", "number", "boolean", "null"}

_unknown contains {"path": text.pointer([k]), "parent": "", "key": k} if {
	req.call.has_schema
	not _open(req.call.schema)
	some k, _ in req.call.args
	not k in _top_declared
	not k in call.facts.exempt
}

_unknown contains u if {
	not predicates.nested_keys_known
	some u in nested
}

_top_declared := _declared(req.call.schema)

# nested are the unknown keys inside nested objects. Only an argument that
# is an object or an array, and whose schema has a "properties" key
# somewhere inside, can hold a closed object below it; the others are not
# walked (the check is the same, just cheaper).
nested contains {"path": text.pointer(array.concat(path, [k])), "parent": text.pointer(path), "key": k} if {
	req.call.has_schema
	some top, top_value in req.call.args
	type_name(top_value) in {"object", "array"}
	_nests(top)
	walk(top_value, [rest, value])
	is_object(value)
	path := array.concat([top], rest)
	sub := object.get(req.call.schema, _schema_path(path), null)
	is_object(sub)
	is_object(sub.properties)
	not _open(sub)
	some k, _ in value
	not k in _declared(sub)
	not k in call.facts.exempt
}

_nests(top) if {
	walk(req.call.schema.properties[top], [p, _])
	count(p) > 0
	p[count(p) - 1] == "properties"
}

# valid lists the declared keys of the object at parent.
# (Functions of several exclusive cases are else-chains here: OPA stops at
# the case that holds instead of trying every one.)
valid(parent) := sorted_declared(req.call.schema) if {
	parent == ""
} else := sort(_declared(object.get(req.call.schema, _schema_path(_segments(parent)), {})))

# METADATA
# description: |
#   sorted_declared is a schema's declared keys in order: a function of
#   the tool's inputSchema alone, so the embedded engine keeps it per
#   schema (custom memo, ADR 0005).
# custom:
#   memo: true
sorted_declared(schema) := sort(_declared(schema))

_segments(ptr) := [seg |
	some raw in array.slice(split(ptr, "/"), 1, count(split(ptr, "/")))
	seg := _segment(raw)
]

_segment(raw) := to_number(raw) if regex.match(`^(0|[1-9][0-9]{0,8})$`, raw)

else := text.unescape(raw)

_schema_path(path) := [x |
	some seg in path
	some x in _schema_step(seg)
]

_schema_step(seg) := ["properties", seg] if is_string(seg)

else := ["items"] if is_number(seg)

_open(s) if s.additionalProperties == true

_open(s) if is_object(s.additionalProperties)

_open(s) if _ = s.patternProperties

_open(s) if _ = s["$ref"]

_open(s) if {
	some branch in _branches(s)
	_open_branch(branch)
}

_open_branch(b) if b.additionalProperties == true

_open_branch(b) if is_object(b.additionalProperties)

_open_branch(b) if _ = b.patternProperties

_open_branch(b) if _ = b["$ref"]

# (array.concat, not array.flatten: a malformed allOf that is not an array
# must leave the function undefined, as it always has.)
# regal ignore:use-array-flatten
_branches(s) := array.concat(array.concat(object.get(s, "allOf", []), object.get(s, "anyOf", [])), object.get(s, "oneOf", []))

_declared(s) := {k | some k, _ in object.get(s, "properties", {})} | {k |
	some branch in _branches(s)
	is_object(branch)
	some k, _ in object.get(branch, "properties", {})
}

# METADATA
# custom:
#   code: UnknownArguments
deny contains {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s: %s; the call was not executed", [call.label, _summary]),
	"details": _details,
} if {
	count(unknown) > 0
	call.unknown_args_mode == "reject"
	c := codes.UnknownArguments # one read of the data, not two
}

# METADATA
# custom:
#   code: IgnoredArguments
warn contains {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s: %s; the call went ahead without them being checked", [call.label, _summary]),
	"details": _details,
} if {
	count(unknown) > 0
	call.unknown_args_mode == "warn"
	c := codes.IgnoredArguments # one read of the data, not two
}

_shown := array.slice(unknown, 0, max_echo)

_details := {
	"unknown": [{"path": text.cut(text.redact_pointer(u.path), 200), "key": text.cut(text.redact_key(u.key), 80), "suggestion": _suggest(u)} | some u in _shown],
	"more": count(unknown) - count(_shown),
	"valid": valid(""),
}

_suggest(u) := text.nearest(u.key, valid(u.parent))

_summary := concat("; ", [_group(parent) | some parent in _parents])

_parents := sort({u.parent | some u in _shown})

_group(parent) := sprintf("unknown %s %s; valid %s: %s", [
	_noun(parent, count(_in(parent)) + _more(parent)),
	_keys(parent),
	_where(parent),
	_valid_text(parent),
])

_in(parent) := [u | some u in _shown; u.parent == parent]

_more(parent) := count(unknown) - count(_shown) if parent == _parents[count(_parents) - 1]

else := 0

_keys(parent) := concat(", ", [_key_text(u) | some u in _in(parent)]) if {
	_more(parent) == 0
} else := sprintf("%s and %d more", [concat(", ", [_key_text(u) | some u in _in(parent)]), _more(parent)])

_key_text(u) := sprintf("%s (did you mean %s?)", [text.quote(text.redact_key(u.key), 80), json.marshal(_suggest(u))]) if {
	_suggest(u) != ""
} else := text.quote(text.redact_key(u.key), 80)

_noun(parent, n) := "argument" if {
	parent == ""
	n == 1
} else := "arguments" if {
	parent == ""
	n > 1
} else := sprintf("key in %s", [text.redact_pointer(parent)]) if {
	parent != ""
	n == 1
} else := sprintf("keys in %s", [text.redact_pointer(parent)]) if {
	parent != ""
	n > 1
}

_where(parent) := "arguments" if parent == ""

else := sprintf("keys in %s", [text.redact_pointer(parent)])

_valid_text(parent) := _names_text(valid(parent))

# METADATA
# description: |
#   A list of declared names as a message shows it: a function of the
#   tool's inputSchema alone, so the embedded engine keeps it per list
#   (custom memo, ADR 0005).
# custom:
#   memo: true
_names_text(names) := "none" if count(names) == 0

else := concat(", ", [json.marshal(k) | some k in names])
