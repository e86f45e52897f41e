package mcpx.steps.ledger_test

import data.mcpx.steps.ledger
import data.mcpx.testdata

_entry(id, server) := {"id": id, "server": server, "tool": "write_file", "args_sha256": "0123456789abcdef0123", "time": "2026-11-29T10:00:00Z", "surface": "mcp"}

_write(entries) := object.union(testdata.call("fs", testdata.write_file, {"path": "/workspace/a"}), {"ledger": {"entries": entries}})

test_pending_entry_denies_write_and_names_clear_command if {
	r := ledger.deny with input as _write([_entry("e1", "fs")]) with data.mcpx.config as testdata.config
	count(r) == 1
	some reason in r
	reason.code == "UnknownOutcomePending"
	reason.details.clear == "mcpx-policy writes clear fs --reason '<what you found on the server>'"
	reason.details.entries == [{"id": "e1", "tool": "write_file", "time": "2026-11-29T10:00:00Z", "args_sha256": "0123456789abcdef0123"}]
	reason.details.total == 1
	contains(reason.message, "write_file at 2026-11-29T10:00:00Z, id e1, args sha256 0123456789ab")
	endswith(reason.message, "clears them with: mcpx-policy writes clear fs --reason '<what you found on the server>'")
}

# The deny names the bare command, whatever else input.ledger holds (an
# older gateway's "clear" included): the answer spells it with the state
# dir or config of the process that decided.
test_clear_command_is_bare if {
	every clear in [null, "", 3, ["x"], "mcpx-policy writes clear fs --state-dir '/var/lib/mcpx policy'"] {
		_default_clear(clear)
	}
	r := ledger.deny with input as _write([_entry("e1", "fs")]) with data.mcpx.config as testdata.config
	some reason in r
	reason.details.clear == "mcpx-policy writes clear fs --reason '<what you found on the server>'"
}

_default_clear(clear) if {
	inp := object.union(_write([_entry("e1", "fs")]), {"ledger": {"entries": [_entry("e1", "fs")], "clear": clear}})
	r := ledger.deny with input as inp with data.mcpx.config as testdata.config
	some reason in r
	reason.details.clear == "mcpx-policy writes clear fs --reason '<what you found on the server>'"
	endswith(reason.message, "clears them with: mcpx-policy writes clear fs --reason '<what you found on the server>'")
}

test_several_entries_counted if {
	r := ledger.deny with input as _write([_entry("e1", "fs"), _entry("e2", "fs")]) with data.mcpx.config as testdata.config
	some reason in r
	contains(reason.message, "2 earlier writes have an unknown outcome (write_file at 2026-11-29T10:00:00Z, id e1, args sha256 0123456789ab; write_file at")
	reason.details.total == 2
	count(reason.details.entries) == 2
}

_many(n) := [_entry(sprintf("e%d", [i]), "fs") | some i in numbers.range(1, n)]

_with_total(entries, total) := object.union(_write(entries), {"ledger": {"entries": entries, "total": total}})

# The engine lists the oldest entries and the total: the deny names them
# and counts the rest.
test_bounded_list_and_total if {
	r := ledger.deny with input as _with_total(_many(10), 100000) with data.mcpx.config as testdata.config
	some reason in r
	reason.details.total == 100000
	count(reason.details.entries) == 10
	reason.details.entries[0].id == "e1"
	contains(reason.message, "fs.write_file: 100000 earlier writes have an unknown outcome (the oldest 10: write_file at 2026-11-29T10:00:00Z, id e1, args sha256 0123456789ab; ")
	contains(reason.message, "id e10, args sha256 0123456789ab; and 99990 more, listed by: mcpx-policy writes); no further writes to fs")
}

# A caller that sends every entry still gets a bounded deny.
test_list_bounded_whatever_the_caller_sends if {
	r := ledger.deny with input as _write(_many(25)) with data.mcpx.config as testdata.config
	some reason in r
	reason.details.total == 25
	count(reason.details.entries) == ledger.max_listed
	contains(reason.message, "25 earlier writes have an unknown outcome (the oldest 10: ")
	contains(reason.message, "and 15 more, listed by: mcpx-policy writes")
}

# A total without entries still denies: a count alone is enough to know the
# server has unknown outcomes.
test_total_without_entries_denies if {
	every n in [1, 3] {
		_denies_with_total_only(n)
	}
}

_denies_with_total_only(n) if {
	r := ledger.deny with input as _with_total([], n) with data.mcpx.config as testdata.config
	[x.code | some x in r] == ["UnknownOutcomePending"]
	some reason in r
	reason.details.entries == []
	reason.details.total == n
	contains(reason.message, sprintf("%d earlier writes have an unknown outcome (listed by: mcpx-policy writes)", [n]))
}

# A total below the entries listed counts the entries.
test_total_never_below_entries if {
	r := ledger.deny with input as _with_total([_entry("e1", "fs"), _entry("e2", "fs")], 1) with data.mcpx.config as testdata.config
	some reason in r
	reason.details.total == 2
	contains(reason.message, "2 earlier writes have an unknown outcome (write_file")
}

test_zero_total_passes if {
	r := ledger.deny with input as _with_total([], 0) with data.mcpx.config as testdata.config
	count(r) == 0
}

test_other_servers_entries_ignored if {
	r := ledger.deny with input as _write([_entry("e1", "git")]) with data.mcpx.config as testdata.config
	count(r) == 0
}

test_no_entries_passes if {
	r := ledger.deny with input as _write([]) with data.mcpx.config as testdata.config
	count(r) == 0
}

test_reads_pass if {
	doc := object.union(testdata.call("fs", testdata.read_file, {}), {"ledger": {"entries": [_entry("e1", "fs")], "error": "corrupt"}})
	r := ledger.deny with input as doc with data.mcpx.config as testdata.config
	count(r) == 0
}

test_unreadable_ledger_denies_writes if {
	doc := object.union(testdata.call("fs", testdata.write_file, {}), {"ledger": {"error": "ledger.json: unexpected end of JSON input"}})
	r := ledger.deny with input as doc with data.mcpx.config as testdata.config
	[x.code | some x in r] == ["LedgerUnreadable"]
}

# An unreadable ledger's deny names, in its details only (the message is
# for an agent and names no path), the bare command that says why,
# whatever else input.ledger holds.
test_unreadable_ledger_names_the_writes_command if {
	cmd := "mcpx-policy writes --state-dir '/var/lib/mcpx policy'"
	every c in [
		{"writes": cmd, "want": "mcpx-policy writes"},
		{"writes": null, "want": "mcpx-policy writes"},
		{"writes": "", "want": "mcpx-policy writes"},
		{"writes": 3, "want": "mcpx-policy writes"},
	] {
		doc := object.union(testdata.call("fs", testdata.write_file, {}), {"ledger": {"error": "corrupt or unreadable", "writes": c.writes}})
		r := ledger.deny with input as doc with data.mcpx.config as testdata.config
		_names_writes(r, c.want)
	}
}

# _names_writes holds when a reason of rs names want in its details, and its
# message names no path.
_names_writes(rs, want) if {
	some reason in rs
	reason.details == {"writes": want}
	not contains(reason.message, "/var/lib")
}
