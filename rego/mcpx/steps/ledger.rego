# METADATA
# title: Step 2 — unknown-outcome ledger
# description: |
#   A write to a server that has unknown-outcome entries is denied until an
#   operator clears them; a write when the ledger could not be read is denied
#   too. Reads always pass.
package mcpx.steps.ledger

import data.mcpx.lib.call
import data.mcpx.lib.req

# clear_command is the exact command that clears this server's entries.
clear_command := sprintf("mcpx-policy writes clear %s", [req.doc.server])

# METADATA
# title: UnknownOutcomePending
# custom:
#   code: UnknownOutcomePending
deny contains {
	"code": "UnknownOutcomePending",
	"step": "ledger",
	"message": sprintf("%s: %s; no further writes to %s until an operator checks what happened and clears them with: %s", [
		call.label, _summary, req.doc.server, clear_command,
	]),
	"details": {"entries": _entries, "clear": clear_command},
} if {
	count(req.doc.ledger_entries) > 0
	call.write
}

# METADATA
# title: LedgerUnreadable
# custom:
#   code: LedgerUnreadable
deny contains {
	"code": "LedgerUnreadable",
	"step": "ledger",
	"message": sprintf("%s: the unknown-outcome ledger cannot be read (%s), so no write is allowed until it is repaired", [call.label, req.doc.ledger_error]),
} if {
	req.doc.ledger_error != null
	call.write
}

_entries := [{
	"id": object.get(e, "id", ""),
	"tool": object.get(e, "tool", ""),
	"time": object.get(e, "time", ""),
	"args_sha256": object.get(e, "args_sha256", ""),
} |
	some e in req.doc.ledger_entries
]

_summary := sprintf("an earlier write's outcome is unknown (%s)", [_describe(_entries[0])]) if count(_entries) == 1

_summary := sprintf("%d earlier writes have an unknown outcome (%s)", [
	count(_entries),
	concat("; ", [_describe(e) | some e in _entries]),
]) if count(_entries) > 1

_describe(e) := sprintf("%s at %s, id %s, args sha256 %s", [e.tool, e.time, e.id, substring(e.args_sha256, 0, 12)])
