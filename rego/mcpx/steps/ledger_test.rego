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
	reason.details.clear == "mcpx-policy writes clear fs"
	reason.details.entries == [{"id": "e1", "tool": "write_file", "time": "2026-11-29T10:00:00Z", "args_sha256": "0123456789abcdef0123"}]
	contains(reason.message, "write_file at 2026-11-29T10:00:00Z, id e1, args sha256 0123456789ab")
	endswith(reason.message, "clears them with: mcpx-policy writes clear fs")
}

test_several_entries_counted if {
	r := ledger.deny with input as _write([_entry("e1", "fs"), _entry("e2", "fs")]) with data.mcpx.config as testdata.config
	some reason in r
	contains(reason.message, "2 earlier writes have an unknown outcome")
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
