# METADATA
# title: Step 2 — unknown-outcome ledger
# description: |
#   A write to a server that has unknown-outcome entries is denied until an
#   operator clears them; a write when the ledger could not be read is denied
#   too. Reads always pass. The deny lists at most max_listed entries (the
#   caller lists the oldest first) and the total, so it stays small however
#   many entries there are.
package mcpx.steps.ledger

import data.mcpx.codes
import data.mcpx.lib.call
import data.mcpx.lib.req

# clear_command is the bare command that clears this server's entries. The
# policy names it without where the ledger is: the process that answers
# (the SDK's Engine, a gateway) spells it with its state dir or config
# (docs/fleet.md, "Commands in the answer"). It carries a --reason for the
# operator to fill in, so that the ledger keeps why it was cleared.
clear_command := sprintf("mcpx-policy writes clear %s --reason '<what you found on the server>'", [req.doc.server])

# writes_command is the bare command that lists the entries and says why
# the ledger cannot be read, spelled by the answer as clear_command is.
writes_command := "mcpx-policy writes"

# max_listed bounds the entries a deny names (the engine passes as many:
# internal/ledger's Listed, tied to this by TestLedgerLargeDecision).
max_listed := 10

# METADATA
# custom:
#   code: UnknownOutcomePending
deny contains {
	"code": codes.UnknownOutcomePending.code,
	"step": codes.UnknownOutcomePending.step,
	"message": sprintf("%s: %s; no further writes to %s until an operator checks what happened and clears them with: %s", [
		call.label, _summary, req.doc.server, clear_command,
	]),
	"details": {"entries": _entries, "total": _total, "clear": clear_command},
} if {
	_total > 0
	call.write
}

# METADATA
# custom:
#   code: LedgerUnreadable
deny contains {
	"code": codes.LedgerUnreadable.code,
	"step": codes.LedgerUnreadable.step,
	"message": sprintf("%s: the unknown-outcome ledger cannot be read (%s), so no write is allowed until it is repaired", [call.label, req.doc.ledger_error]),
	"details": {"writes": writes_command},
} if {
	req.doc.ledger_error != null
	call.write
}

_total := req.doc.ledger_total

# _entries are the listed entries with the four fields a deny shows, ""
# where one is missing.
_entries := [{
	"id": object.get(e, "id", ""),
	"tool": object.get(e, "tool", ""),
	"time": object.get(e, "time", ""),
	"args_sha256": object.get(e, "args_sha256", ""),
} |
	some e in array.slice(req.doc.ledger_entries, 0, max_listed)
]

# _summary has one rule per case, each guarded so exactly one holds for any
# total > 0: a missing summary would leave the deny undefined.
_summary := sprintf("an earlier write's outcome is unknown (%s)", [_listed]) if {
	_total == 1
	count(_entries) == 1
}

_summary := sprintf("%d earlier writes have an unknown outcome (%s)", [_total, _listed]) if {
	_total > 1
	count(_entries) == _total
}

_summary := sprintf("%d earlier writes have an unknown outcome (the oldest %d: %s; and %d more, listed by: mcpx-policy writes)", [
	_total, count(_entries), _listed, _total - count(_entries),
]) if {
	count(_entries) > 0
	_total > count(_entries)
}

_summary := sprintf("%d earlier writes have an unknown outcome (listed by: mcpx-policy writes)", [_total]) if {
	_total > 0
	count(_entries) == 0
}

_listed := concat("; ", [sprintf("%s at %s, id %s, args sha256 %s", [e.tool, e.time, e.id, substring(e.args_sha256, 0, 12)]) |
	some e in _entries
])
