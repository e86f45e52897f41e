package mcpx.steps.budget_test

import data.mcpx
import data.mcpx.steps.budget
import data.mcpx.testdata

# _config is the fixtures' config with two budgets on fs: every write to
# write_file, and destructive writes to any tool.
_config := object.union(testdata.config, {
	"servers": {"fs": object.union(testdata.config.servers.fs, {"budgets": {
		"exact": {"write_file": ["fs-writes"]},
		"regex": [{"source": "*", "re": "^.*$", "values": ["fs-deletes"]}],
	}})},
	"budgets": {
		"fs-writes": {"max": 3, "window": "1h", "window_seconds": 3600, "writes": "all", "per": "principal", "origin": "mcpx-policy.yaml:30", "description": ""},
		"fs-deletes": {"max": 2, "window": "10m", "window_seconds": 600, "writes": "destructive", "per": "server", "origin": "mcpx-policy.yaml:35", "description": ""},
	},
})

_tool(name, destructive) := {
	"name": name,
	"annotations": {"readOnlyHint": false, "destructiveHint": destructive},
	"inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
}

_call(tool, counts) := object.union(testdata.call("fs", tool, {"path": "/workspace/a"}), {"ledger": {"entries": [], "total": 0, "budgets": counts}})

_n(count) := {"count": count, "retry_at": "2026-12-01T23:00:00Z"}

test_counts_below_max_pass if {
	r := budget.deny with input as _call(_tool("write_file", false), {"fs-writes": _n(2)}) with data.mcpx.config as _config
	count(r) == 0
}

test_count_at_max_denies_with_retry_time if {
	r := budget.deny with input as _call(_tool("write_file", false), {"fs-writes": _n(3)}) with data.mcpx.config as _config
	count(r) == 1
	some reason in r
	reason.code == "WriteBudgetExceeded"
	reason.step == "budget"
	reason.details == {"budget": "fs-writes", "max": 3, "window": "1h", "writes": "all", "per": "principal", "count": 3, "retry_at": "2026-12-01T23:00:00Z"}
	reason.message == "fs.write_file: write budget \"fs-writes\" allows 3 writes per 1h per principal, and 3 were dispatched in the window; this write is refused until 2026-12-01T23:00:00Z (retry then)"
}

# A destructive-only budget does not count a non-destructive write; it
# counts a destructive one (and both budgets can deny at once).
test_destructive_budget_counts_destructive_writes_only if {
	budget.applicable == {"fs-writes"} with input as _call(_tool("write_file", false), {"fs-writes": _n(0)}) with data.mcpx.config as _config
	budget.applicable == {"fs-writes", "fs-deletes"} with input as _call(_tool("write_file", true), {}) with data.mcpx.config as _config
	r := budget.deny with input as _call(_tool("write_file", true), {"fs-writes": _n(3), "fs-deletes": _n(5)}) with data.mcpx.config as _config
	{x.details.budget | some x in r} == {"fs-writes", "fs-deletes"}
}

test_reads_are_never_counted if {
	read := {"name": "write_file", "annotations": {"readOnlyHint": true}}
	count(budget.applicable) == 0 with input as _call(read, {}) with data.mcpx.config as _config
	count(budget.deny) == 0 with input as _call(read, {}) with data.mcpx.config as _config
}

# No count, or a malformed one, for a budget that counts the call denies
# (fail closed): a gateway that does not count cannot pass a budget.
test_missing_or_malformed_count_denies if {
	every counts in [{}, {"fs-writes": {"count": -1, "retry_at": ""}}, {"fs-writes": {"count": 1.5, "retry_at": ""}}, {"fs-writes": {"count": "1", "retry_at": ""}}, {"fs-writes": {"count": 0}}] {
		r := budget.deny with input as _call(_tool("write_file", false), counts) with data.mcpx.config as _config
		some reason in r
		reason.code == "WriteBudgetExceeded"
		reason.details == {"budget": "fs-writes"}
		contains(reason.message, "fail closed")
	}
}

# The whole decision: the budget's deny decides at step budget, ahead of
# the write mode's (an ask beyond the budget is a deny), and the call is
# never decided by its plan.
test_decision_denies_at_budget_step if {
	d := mcpx.decision with input as _call(_tool("write_file", false), {"fs-writes": _n(3)})
		with data.mcpx.config as object.union(_config, {"write": "ask", "servers": {"fs": object.union(_config.servers.fs, {"write": "ask"})}})
		with data.mcpx.overrides.deny as set()
		with data.mcpx.overrides.ask as set()
	d.outcome == "deny"
	d.step == "budget"
	[r.code | some r in d.reasons] == ["WriteBudgetExceeded", "WriteNeedsConfirmation"]
}

test_decision_allows_below_budget if {
	d := mcpx.decision with input as _call(_tool("write_file", false), {"fs-writes": _n(1)}) with data.mcpx.config as _config
		with data.mcpx.overrides.deny as set()
		with data.mcpx.overrides.ask as set()
	d.outcome == "allow"
}

test_decision_without_counts_denies if {
	inp := testdata.call("fs", _tool("write_file", false), {"path": "/workspace/a"})
	d := mcpx.decision with input as inp with data.mcpx.config as _config
		with data.mcpx.overrides.deny as set()
		with data.mcpx.overrides.ask as set()
	d.outcome == "deny"
	d.step == "budget"
}

_loop_config := object.union(_config, {
	"servers": {"fs": object.union(_config.servers.fs, {"budgets": {
		"exact": {"write_file": ["fs-loop"]},
		"regex": [],
	}})},
	"budgets": {"fs-loop": {"max": 2, "window": "10m", "window_seconds": 600, "writes": "all", "per": "call", "origin": "mcpx-policy.yaml:40", "description": ""}},
})

test_loop_breaker_denies_the_repeated_call if {
	r := budget.deny with input as _call(_tool("write_file", false), {"fs-loop": _n(2)}) with data.mcpx.config as _loop_config
	count(r) == 1
	some reason in r
	reason.code == "RepeatedCall"
	reason.step == "budget"
	reason.details == {"loop_breaker": "fs-loop", "max": 2, "window": "10m", "count": 2, "retry_at": "2026-12-01T23:00:00Z"}
	reason.message == "fs.write_file: this exact call was dispatched 2 times in the last 10m, the most loop breaker \"fs-loop\" allows; it looks like a loop, so it is refused until 2026-12-01T23:00:00Z"
	count(budget.deny) == 0 with input as _call(_tool("write_file", false), {"fs-loop": _n(1)}) with data.mcpx.config as _loop_config
}

test_loop_breaker_without_count_denies if {
	r := budget.deny with input as _call(_tool("write_file", false), {}) with data.mcpx.config as _loop_config
	some reason in r
	reason.code == "RepeatedCall"
	reason.details == {"loop_breaker": "fs-loop"}
	contains(reason.message, "loop breaker \"fs-loop\" counts this write")
}
