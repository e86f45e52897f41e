# METADATA
# title: Input validation
# description: |
#   Checks the shape of the input document (SPEC §1.2). Any problem makes the
#   decision an InvalidInput deny; the steps read the normalized values below
#   and never the raw input, so a missing field cannot silently pass. Every
#   raw field is read through object.get with a null default first: a
#   negated test on an undefined reference would be undefined, not true.
package mcpx.lib.req

default _doc := {}

_doc := input if is_object(input)

_raw_server := object.get(_doc, "server", null)

_raw_tool := object.get(_doc, "tool", null)

default _tool_doc := {}

_tool_doc := _raw_tool if is_object(_raw_tool)

_raw_name := object.get(_tool_doc, "name", null)

_raw_annotations := object.get(_tool_doc, "annotations", {})

_raw_schema := object.get(_tool_doc, "inputSchema", null)

_raw_args := object.get(_doc, "args", {})

_raw_ledger := object.get(_doc, "ledger", {})

default _ledger_doc := {}

_ledger_doc := _raw_ledger if is_object(_raw_ledger)

_raw_entries := object.get(_ledger_doc, "entries", [])

_raw_sha256 := object.get(_doc, "call_sha256", null)

# problems lists what is wrong with the input, one message each.
problems contains "input must be an object" if not is_object(input)

problems contains "server must be a non-empty string" if not _non_empty_string(_raw_server)

problems contains "tool must be an object (an MCP Tool with name, annotations, inputSchema)" if not is_object(_raw_tool)

problems contains "tool.name must be a non-empty string" if {
	is_object(_raw_tool)
	not _non_empty_string(_raw_name)
}

problems contains "args must be an object" if not is_object(_raw_args)

problems contains "tool.annotations must be an object" if not is_object(_raw_annotations)

problems contains sprintf("tool.annotations.%s must be a boolean", [hint]) if {
	some hint in ["readOnlyHint", "destructiveHint"]
	is_object(_raw_annotations)
	not is_boolean(object.get(_raw_annotations, hint, false))
}

problems contains "tool.inputSchema must be an object" if {
	_raw_schema != null
	not is_object(_raw_schema)
}

problems contains sprintf("mode %s is not a write mode (want ask, allow or deny)", [json.marshal(m)]) if {
	m := object.get(_doc, "mode", "ask")
	not m in {"ask", "allow", "deny"}
}

problems contains "ledger must be an object" if not is_object(_raw_ledger)

problems contains "ledger.entries must be an array of objects" if not _entries_ok

problems contains "principal must be an object" if not is_object(object.get(_doc, "principal", {}))

problems contains "surface must be a string" if not is_string(object.get(_doc, "surface", ""))

problems contains "call_sha256 must be a lowercase hex SHA-256 (64 characters 0-9a-f)" if {
	_raw_sha256 != null
	not _sha256_hex(_raw_sha256)
}

_entries_ok if {
	is_array(_raw_entries)
	every e in _raw_entries {
		is_object(e)
	}
}

# server is the server the call goes to ("" when malformed).
default server := ""

server := _raw_server if is_string(_raw_server)

# tool is the tool's name ("" when malformed).
default tool := ""

tool := _raw_name if is_string(_raw_name)

# args is the call's arguments; absent arguments are the empty object.
default args := {}

args := _raw_args if is_object(_raw_args)

# annotations are the server's hints for the tool; absent ones take the MCP
# defaults (readOnlyHint false, destructiveHint true).
default annotations := {}

annotations := _raw_annotations if is_object(_raw_annotations)

default read_only := false

read_only if annotations.readOnlyHint == true

default destructive := true

destructive := false if annotations.destructiveHint == false

# schema is the tool's inputSchema; has_schema is false when the caller gave
# none.
default schema := {}

schema := _raw_schema if is_object(_raw_schema)

default has_schema := false

has_schema if is_object(_raw_schema)

# mode is the caller's resolved write mode, or null.
mode := object.get(_doc, "mode", null)

# ledger_entries are this server's unknown-outcome entries.
default ledger_entries := []

ledger_entries := [e |
	some e in _raw_entries
	is_object(e)
	object.get(e, "server", server) == server
] if is_array(_raw_entries)

# ledger_error is the caller's reason when it could not read the ledger, or
# null.
ledger_error := object.get(_ledger_doc, "error", null)

# call_sha256 is the caller's SHA-256 of the RFC 8785 canonical call, echoed
# in decision.call.sha256 ("" when the caller gave none). Rego cannot
# canonicalize JSON exactly, so the caller computes it (docs/fleet.md).
default call_sha256 := ""

call_sha256 := _raw_sha256 if _sha256_hex(_raw_sha256)

_sha256_hex(s) if {
	is_string(s)
	regex.match(`^[0-9a-f]{64}$`, s)
}

_non_empty_string(s) if {
	is_string(s)
	s != ""
}
