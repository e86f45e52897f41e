# METADATA
# title: Step 2b — write budgets and loop breakers
# description: |
#   Loop breakers are budgets per exact call (per "call": the SHA-256 of
#   its canonical form) and deny with RepeatedCall.
#   A write that a budget counts is denied while the budget's window
#   already holds its max of dispatched writes (docs/configuration.md,
#   budgets). The counts come with the input (input.ledger.budgets: for
#   each budget that counts the call, {"count", "retry_at"}), read by the
#   gateway from the ledger's store, so a stock OPA given the same counts
#   decides the same. A budget that counts the call but whose count is
#   missing or malformed denies too (fail closed). Reads always pass.
package mcpx.steps.budget

import data.mcpx.codes
import data.mcpx.lib.call

# applicable are the ids of the budgets that count the call: a write to a
# tool one of their patterns matches (the pool's or the server's), and for
# a budget of destructive writes, a destructive one.
applicable contains id if {
	call.write
	some id in call.facts.budgets
	_counts_class(data.mcpx.config.budgets[id].writes)
}

_counts_class("all")

_counts_class("destructive") if call.destructive

# METADATA
# custom:
#   code: WriteBudgetExceeded
deny contains {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s: write budget %q allows %d %s per %s%s, and %d were dispatched in the window; this write is refused until %s (retry then)", [
		call.label, id, b.max, _what(b.writes), b.window, _per(b.per), n.count, n.retry_at,
	]),
	"details": {
		"budget": id, "max": b.max, "window": b.window, "writes": b.writes, "per": b.per,
		"count": n.count, "retry_at": n.retry_at,
	},
} if {
	some id in applicable
	b := data.mcpx.config.budgets[id]
	b.per != "call"
	n := _count(id)
	n.count >= b.max
	c := codes.WriteBudgetExceeded
}

# METADATA
# custom:
#   code: RepeatedCall
deny contains {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s: this exact call was dispatched %d times in the last %s, the most loop breaker %q allows; it looks like a loop, so it is refused until %s", [
		call.label, n.count, b.window, id, n.retry_at,
	]),
	"details": {"loop_breaker": id, "max": b.max, "window": b.window, "count": n.count, "retry_at": n.retry_at},
} if {
	some id in applicable
	b := data.mcpx.config.budgets[id]
	b.per == "call"
	n := _count(id)
	n.count >= b.max
	c := codes.RepeatedCall
}

# METADATA
# custom:
#   code: WriteBudgetExceeded
deny contains {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s: write budget %q counts this write but the gateway gave no usable count for it, so the write is refused (fail closed)", [call.label, id]),
	"details": {"budget": id},
} if {
	some id in applicable
	data.mcpx.config.budgets[id].per != "call"
	not _count(id)
	c := codes.WriteBudgetExceeded
}

# METADATA
# custom:
#   code: RepeatedCall
deny contains {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s: loop breaker %q counts this write but the gateway gave no usable count for it, so the write is refused (fail closed)", [call.label, id]),
	"details": {"loop_breaker": id},
} if {
	some id in applicable
	data.mcpx.config.budgets[id].per == "call"
	not _count(id)
	c := codes.RepeatedCall
}

# _count is the input's count for budget id when it is well formed: a
# non-negative integer count and a retry_at string.
_count(id) := n if {
	n := object.get(object.get(input, "ledger", {}), ["budgets", id], null)
	is_number(n.count)
	n.count >= 0
	floor(n.count) == n.count
	is_string(n.retry_at)
}

_what("all") := "writes"

_what("destructive") := "destructive writes"

_per("server") := ""

_per("principal") := " per principal"

_per("session") := " per session"
