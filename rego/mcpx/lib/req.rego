# METADATA
# title: Input validation
# description: |
#   Checks the shape of the input document (docs/fleet.md, "Ask it: the
#   input document"). Any problem makes the
#   decision an InvalidInput deny; the steps read the normalized call (doc)
#   and never the raw input, so a missing field cannot silently pass. Every
#   raw field is read through object.get with a null default first: a
#   negated test on an undefined reference would be undefined, not true.
#
#   A well-formed call is recognized by well_shaped, one rule body that implies
#   every shape check below passes; it decides the common case in a few
#   expressions. Anything well_shaped does not recognize takes the full checks,
#   which name each problem. well_shaped only ever adds speed: when it holds, the
#   full checks find nothing. For an input with no problem at all, doc reads
#   the input directly, and equals its full-path value.
#
#   Every call also has its argument numbers checked (_number_problems): a
#   number the server would read as another value is refused, so the
#   policy never judges a value the server does not act on
#   (docs/argument-rules.md, "Numbers").
package mcpx.lib.req

import data.mcpx.lib.predicates
import data.mcpx.lib.text

# well_shaped holds for a call whose every field is present-and-valid or absent in
# the way the engine builds it: server and tool name non-empty strings, args
# an object, annotations an object of boolean hints, inputSchema an object or
# null, a known mode, a ledger object with an array of objects and a count,
# a principal object, a surface string and a lowercase hex call_sha256 or
# none.
well_shaped if {
	is_string(input.server)
	input.server != ""
	is_string(input.tool.name)
	input.tool.name != ""
	is_object(input.args)
	ann := object.get(input.tool, "annotations", {})
	is_object(ann)
	type_name(object.get(ann, "readOnlyHint", false)) == "boolean"
	type_name(object.get(ann, "destructiveHint", false)) == "boolean"
	type_name(object.get(input.tool, "inputSchema", null)) in {"object", "null"}
	object.get(input, "mode", "ask") in {"ask", "allow", "deny"}
	ledger := object.get(input, "ledger", {})
	is_object(ledger)
	entries := object.get(ledger, "entries", [])
	is_array(entries)
	every e in entries {
		is_object(e)
	}
	_count(object.get(ledger, "total", 0))
	is_object(object.get(input, "principal", {}))
	is_string(object.get(input, "surface", ""))
	sha := object.get(input, "call_sha256", _zero_sha256)
	is_string(sha)
	regex.match(`^[0-9a-f]{64}$`, sha)
}

_zero_sha256 := "0000000000000000000000000000000000000000000000000000000000000000"

# problems names every way the input is malformed (empty when it is not).
problems := _number_problems if well_shaped

else := _problems | _number_problems

default _input := {}

_input := input if is_object(input)

_raw_server := object.get(_input, "server", null)

_raw_tool := object.get(_input, "tool", null)

default _tool_doc := {}

_tool_doc := _raw_tool if is_object(_raw_tool)

_raw_name := object.get(_tool_doc, "name", null)

_raw_annotations := object.get(_tool_doc, "annotations", {})

_raw_schema := object.get(_tool_doc, "inputSchema", null)

_raw_args := object.get(_input, "args", {})

_raw_ledger := object.get(_input, "ledger", {})

default _ledger_doc := {}

_ledger_doc := _raw_ledger if is_object(_raw_ledger)

_raw_entries := object.get(_ledger_doc, "entries", [])

_raw_total := object.get(_ledger_doc, "total", 0)

_raw_sha256 := object.get(_input, "call_sha256", null)

# problems lists what is wrong with the input, one message each.
_problems contains "input must be an object" if not is_object(input)

_problems contains "server must be a non-empty string" if not _non_empty_string(_raw_server)

_problems contains "tool must be an object (an MCP Tool with name, annotations, inputSchema)" if not is_object(_raw_tool)

_problems contains "tool.name must be a non-empty string" if {
	is_object(_raw_tool)
	not _non_empty_string(_raw_name)
}

_problems contains "args must be an object" if not is_object(_raw_args)

_problems contains "tool.annotations must be an object" if not is_object(_raw_annotations)

_problems contains sprintf("tool.annotations.%s must be a boolean", [hint]) if {
	is_object(_raw_annotations)
	some hint in ["readOnlyHint", "destructiveHint"]
	not is_boolean(object.get(_raw_annotations, hint, false))
}

_problems contains "tool.inputSchema must be an object" if {
	_raw_schema != null
	not is_object(_raw_schema)
}

_problems contains sprintf("mode %s is not a write mode (want ask, allow or deny)", [json.marshal(m)]) if {
	m := object.get(_input, "mode", "ask")
	not m in {"ask", "allow", "deny"}
}

_problems contains "ledger must be an object" if not is_object(_raw_ledger)

_problems contains "ledger.entries must be an array of objects" if not _entries_ok

_problems contains "ledger.total must be a non-negative integer" if not _count(_raw_total)

_problems contains "principal must be an object" if not is_object(object.get(_input, "principal", {}))

_problems contains "surface must be a string" if not is_string(object.get(_input, "surface", ""))

_problems contains "call_sha256 must be a lowercase hex SHA-256 (64 characters 0-9a-f)" if {
	_raw_sha256 != null
	not _sha256_hex(_raw_sha256)
}

_entries_ok if {
	is_array(_raw_entries)
	every e in _raw_entries {
		is_object(e)
	}
}

# doc is the call as the steps read it, every field present and of its
# type whatever the input held:
#   server, tool     the server and the tool's name ("" when malformed)
#   args             the arguments ({} when absent)
#   annotations      the server's hints for the tool ({} when absent);
#                    read_only and destructive resolve them with the MCP
#                    defaults (readOnlyHint false, destructiveHint true)
#   schema           the tool's inputSchema ({} when none); has_schema
#                    tells whether the caller gave one
#   mode             the caller's write mode, or null (it may only
#                    tighten the configured one: lib.call.write_mode)
#   ledger_entries   this server's unknown-outcome entries (the caller
#                    may list only the oldest of them)
#   ledger_total     how many there are: the caller's total, never below
#                    the entries listed
#   ledger_error     the caller's reason when it could not read the
#                    ledger, or null
#   call_sha256      the caller's SHA-256 of the RFC 8785 canonical call,
#                    echoed in decision.call.sha256 ("" when none). Rego
#                    cannot canonicalize JSON exactly, so the caller
#                    computes it (docs/fleet.md).
# One document, so a decision evaluates one rule for all of them; for a
# well-formed input (lib.predicates.well_formed: no problem at all) it is
# read from the input directly, which then equals the checked values.
doc := {
	"server": input.server,
	"tool": input.tool.name,
	"args": input.args,
	"annotations": annotations,
	"read_only": object.get(annotations, "readOnlyHint", false) == true,
	"destructive": object.get(annotations, "destructiveHint", true) != false,
	"schema": object.get({"object": schema}, type_name(schema), {}),
	"has_schema": is_object(schema),
	"mode": object.get(input, "mode", null),
	"ledger_entries": listed,
	"ledger_total": max([count(listed), object.get(ledger, "total", 0)]),
	"ledger_error": object.get(ledger, "error", null),
	"call_sha256": object.get(input, "call_sha256", ""),
} if {
	predicates.well_formed
	annotations := object.get(input.tool, "annotations", {})
	schema := object.get(input.tool, "inputSchema", null)
	ledger := object.get(input, "ledger", {})
	listed := [e | some e in object.get(ledger, "entries", []); object.get(e, "server", input.server) == input.server]
} else := {
	"server": _server,
	"tool": _tool,
	"args": _args,
	"annotations": _annotations,
	"read_only": object.get(_annotations, "readOnlyHint", false) == true,
	"destructive": object.get(_annotations, "destructiveHint", true) != false,
	"schema": _schema,
	"has_schema": is_object(_raw_schema),
	"mode": object.get(_input, "mode", null),
	"ledger_entries": _ledger_entries,
	"ledger_total": max([count(_ledger_entries), _ledger_total]),
	"ledger_error": object.get(_ledger_doc, "error", null),
	"call_sha256": _call_sha256,
}

# call is what the argument steps (unknown arguments, argument rules) and
# the tool's facts read of doc: server, tool, args, schema, has_schema,
# equal to those fields of doc. For a well-formed input it is read from the
# input directly, so a decision that needs no more does not build doc.
call := {
	"server": input.server,
	"tool": input.tool.name,
	"args": input.args,
	"schema": object.get({"object": schema}, type_name(schema), {}),
	"has_schema": is_object(schema),
} if {
	predicates.well_formed
	schema := object.get(input.tool, "inputSchema", null)
} else := {
	"server": doc.server,
	"tool": doc.tool,
	"args": doc.args,
	"schema": doc.schema,
	"has_schema": doc.has_schema,
}

# The full path's values, for any input.
default _server := ""

_server := _raw_server if is_string(_raw_server)

default _tool := ""

_tool := _raw_name if is_string(_raw_name)

default _args := {}

_args := _raw_args if is_object(_raw_args)

default _annotations := {}

_annotations := _raw_annotations if is_object(_raw_annotations)

default _schema := {}

_schema := _raw_schema if is_object(_raw_schema)

default _ledger_entries := []

_ledger_entries := [e |
	some e in _raw_entries
	is_object(e)
	object.get(e, "server", _server) == _server
] if {
	is_array(_raw_entries)
}

default _ledger_total := 0

_ledger_total := _raw_total if _count(_raw_total)

default _call_sha256 := ""

_call_sha256 := _raw_sha256 if _sha256_hex(_raw_sha256)

_sha256_hex(s) if {
	is_string(s)
	regex.match(`^[0-9a-f]{64}$`, s)
}

_count(n) if {
	is_number(n)
	n >= 0
	floor(n) == n
}

_non_empty_string(s) if {
	is_string(s)
	s != ""
}

# _number_problems names each number of the arguments that a JSON reader
# using IEEE 754 doubles (JavaScript's JSON.parse, Go's encoding/json into
# any, Python's for a fraction or an exponent: the reader of most MCP
# servers) reads as another number than the one written: one that is not
# the shortest text of the double it rounds to (9007199254740993 reads as
# 9007199254740992, 1.0000000000000001 as 1), or one beyond the doubles'
# range (1e400). 0.1 is fine: every reader rounds it to the same double,
# whose shortest text is 0.1 again. Every other number is exactly the
# double the server acts on, so the policy's comparisons, which OPA makes
# on the decimal value, agree with the server's.
_number_problems contains msg if {
	some n in _suspects
	not _double_exact(n)
	walk(input.args, [path, v])
	v == n
	json.marshal(v) == json.marshal(n) # OPA may call 0.1 and 0.1000000000000000000001 equal
	msg := _number_message(path, n)
}

# _suspects are the numbers of the arguments other than those written in
# at most 15 characters of digits, a sign and a point: such a number has at
# most 15 significant digits and lies between 1e-13 and 1e15 (or is 0),
# and any such decimal is the shortest text of its double (two different
# decimals of 15 digits are further apart than a double's precision). They
# are the common case, decided by one regex on their text, with no
# function call, on a walk that builds no paths (OPA's fast walk).
_suspects := [n |
	walk(input.args, [_, n])
	is_number(n)
	not regex.match(`^[-0-9.]{1,15}$`, json.marshal(n))
]

_number_message(path, n) := sprintf(
	"args %s: the number %s reads as %s in a double (how most MCP servers parse JSON): the server would act on a value the policy did not judge",
	[text.cut(text.pointer(path), 120), text.cut(json.marshal(n), 40), _double_read(n)],
) if abs(n) <= _max_double

_number_message(path, n) := sprintf(
	"args %s: the number %s is beyond the range of a double (how most MCP servers parse JSON)",
	[text.cut(text.pointer(path), 120), text.cut(json.marshal(n), 40)],
) if abs(n) > _max_double

_max_double := 1.7976931348623157e308

# _double_exact holds when n is exactly the shortest text of the double a
# reader rounds it to.
_double_exact(n) if {
	abs(n) <= _max_double
	to_number(_undotted(_double_read(n))) == n
}

# _double_read is the shortest text of the double a reader rounds n to,
# for n within the doubles' range. sprintf's %v reads a number written
# with a fraction or an exponent as a Go float64, and an integer exactly:
# a number that is not an integer is always written so, an integer may be
# written either way and is given a fraction first.
_double_read(n) := sprintf("%v", [n]) if {
	n != floor(n)
} else := sprintf("%v", [to_number(_as_fraction(json.marshal(n)))])

_as_fraction(s) := s if regex.match(`[.eE]`, s)

_as_fraction(s) := concat("", [s, ".0"]) if not regex.match(`[.eE]`, s)

# _undotted writes a number's text without a decimal point (1.5e+21 as
# 15e20). OPA compares two numbers that both have a fraction and more
# than 15 digits as float64s, not exactly; one side without a point
# keeps the comparison exact.
_undotted(s) := s if not contains(s, ".")

_undotted(s) := sprintf("%s%se%d", [whole_frac[0], whole_frac[1], exp - count(whole_frac[1])]) if {
	contains(s, ".")
	mant_exp := array.concat(split(s, "e"), ["0"]) # no exponent: 0
	whole_frac := split(mant_exp[0], ".")
	exp := to_number(trim_prefix(mant_exp[1], "+"))
}
