# METADATA
# title: Pinned tool definition (before step 1)
# description: |
#   With pinTools ask or deny for the call's server (its own mode, else the
#   pool's; off by default), a tool whose definition is not the one pinned
#   is refused (deny) or put to a person (ask) with ToolDefinitionChanged
#   until an operator accepts the new definition. The caller compares the
#   definition with its pin and passes the result as input.tool.pin
#   ({"status": "ok"|"new"|"changed"|"error", "sha256", "pinned_sha256",
#   "changed": [fields], "error"}): Rego cannot hash canonical JSON, and the
#   pins live in the caller's state dir (docs/fleet.md). A new tool passes:
#   the caller pins it on first sight (trust on first use). A pin that could
#   not be checked ("error") denies in both modes. With pinning on, a
#   missing or malformed pin is an InvalidInput (problems), never a pass;
#   with it off, input.tool.pin is not read.
package mcpx.steps.pin

import data.mcpx.codes
import data.mcpx.lib.call
import data.mcpx.lib.config
import data.mcpx.lib.req

# mode is the call's server's pinTools mode (mode_of).
mode := mode_of(req.doc.server)

# mode_of is server's pinTools mode: its own, else the pool's, else off.
mode_of(server) := [m |
	some m in [
		object.get(object.get(object.get(config.global, "servers", {}), server, {}), "pinTools", null),
		object.get(config.pool, "pinTools", null),
		config.vocab.defaults.pinTools, # (not config.default_mode: a function call per decision costs)
	]
	m != null
][0]

# accept_command is the bare command that accepts the definition the
# caller saw (arguments a POSIX shell would split are single-quoted). The
# policy names it without where the pins are: the process that answers
# spells it with its state dir (docs/fleet.md, "Commands in the answer").
accept_command := sprintf("mcpx-policy pins accept %s %s --sha256 %s", [
	_quote(req.doc.server), _quote(req.doc.tool), _pin.sha256,
])

# METADATA
# custom:
#   code: ToolDefinitionChanged
deny contains _changed("refused until an operator reviews the change and accepts it with") if {
	mode == "deny"
	_pin.status == "changed"
}

# METADATA
# custom:
#   code: ToolDefinitionChanged
deny contains {
	"code": codes.ToolDefinitionChanged.code,
	"step": codes.ToolDefinitionChanged.step,
	# regal ignore:line-length
	"message": sprintf("%s: the tool's definition cannot be checked against its pin (%s), so the call is refused until an operator repairs the pin store (see: mcpx-policy pins)", [
		call.label, _pin.error,
	]),
	"details": {"mode": mode, "error": _pin.error},
} if {
	_on
	_pin.status == "error"
}

# METADATA
# custom:
#   code: ToolDefinitionChanged
ask contains _changed("a person confirms this call, or an operator reviews the change and accepts it with") if {
	mode == "ask"
	_pin.status == "changed"
}

# problems name what is wrong with input.tool.pin when pinning is on: an
# InvalidInput, since the decision would otherwise not know whether the
# definition is the trusted one.
# regal ignore:line-length
problems contains sprintf("input.tool.pin is missing, and %s pins tool definitions (pinTools: %s): the caller passes the definition's pin status (Engine.OPAInput does; docs/fleet.md)", [json.marshal(req.doc.server), mode]) if {
	_on
	_raw_pin == null
}

problems contains "input.tool.pin must be an object" if {
	_on
	_raw_pin != null
	not is_object(_raw_pin)
}

problems contains sprintf("input.tool.pin.status %s is not ok, new, changed or error", [json.marshal(object.get(_pin_object, "status", null))]) if {
	_on
	is_object(_raw_pin)
	not object.get(_pin_object, "status", null) in {"ok", "new", "changed", "error"}
}

problems contains sprintf("input.tool.pin.%s must be a SHA-256 in lowercase hex", [key]) if {
	_on
	_pin_object.status == "changed"
	some key in ["sha256", "pinned_sha256"]
	not _hex_sha256(object.get(_raw_pin, key, null))
}

problems contains "input.tool.pin.changed must be a list of field names" if {
	_on
	_pin_object.status == "changed"
	not _names(object.get(_raw_pin, "changed", []))
}

problems contains "input.tool.pin.error must be a string" if {
	_on
	_pin_object.status == "error"
	not is_string(object.get(_raw_pin, "error", null))
}

# config_problems make the config unusable for the call: a pinTools mode
# the step does not know (the loader refuses one; this guards data that did
# not come from it).
config_problems contains sprintf("pinTools mode %s is not ask, deny or off", [json.marshal(mode)]) if {
	not config.vocab.pinTools[mode]
}

_on if mode in {"ask", "deny"}

default _tool_doc := {}

_tool_doc := input.tool if is_object(input.tool)

_raw_pin := object.get(_tool_doc, "pin", null)

# _pin_object is the pin when it is an object, else empty (the problems
# read its fields through it: a missing pin is a problem, never an error).
default _pin_object := {}

_pin_object := _raw_pin if is_object(_raw_pin)

# _pin is the pin as the findings read it, with the defaults a missing
# optional field takes.
_pin := object.union({"changed": [], "error": ""}, _raw_pin) if is_object(_raw_pin)

_hex_sha256(s) if {
	is_string(s)
	regex.match(`^[0-9a-f]{64}$`, s)
}

_names(xs) if {
	is_array(xs)
	every x in xs {
		is_string(x)
	}
}

_changed(tail) := {
	"code": codes.ToolDefinitionChanged.code,
	"step": codes.ToolDefinitionChanged.step,
	"message": sprintf("%s: the tool's definition changed since it was pinned (%s; pinned sha256 %s, now %s); %s: %s", [
		call.label, _what, substring(_pin.pinned_sha256, 0, 12), substring(_pin.sha256, 0, 12), tail, accept_command,
	]),
	"details": {
		"mode": mode,
		"pinned_sha256": _pin.pinned_sha256,
		"sha256": _pin.sha256,
		"changed": _pin.changed,
		"accept": accept_command,
	},
}

default _what := "the caller did not say which fields changed"

_what := sprintf("%s changed", [concat(", ", _pin.changed)]) if count(_pin.changed) > 0

# _quote single-quotes s unless a POSIX shell reads it as one word as it
# is (the characters render.Commands leaves unquoted too).
_quote(s) := s if {
	regex.match(`^[A-Za-z0-9._/:@+=,-]+$`, s)
} else := concat("", ["'", replace(s, "'", `'\''`), "'"])
