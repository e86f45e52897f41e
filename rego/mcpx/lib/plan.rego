# METADATA
# title: Planned decisions
# description: |
#   The decision documents that depend only on the config and on the call's
#   server, tool name, mode and annotations, rendered by the same functions
#   the steps use. The embedded engine memoizes them (custom memo, ADR 0005):
#   for a tool it has seen, the common call's decision is a lookup. The
#   decision reads a planned document only when every step that depends on
#   the arguments, the ledger or the overrides provably finds nothing, and
#   each planned document equals what the steps produce
#   (test_plans_equal_the_steps). Stock OPA and opa test compute them per
#   query: one document per query, never all of a tool's.
package mcpx.lib.plan

import data.mcpx.lib.config
import data.mcpx.lib.shadow
import data.mcpx.lib.tool
import data.mcpx.steps.destructive
import data.mcpx.steps.hidden
import data.mcpx.steps.pin
import data.mcpx.steps.write_mode

# METADATA
# title: common
# description: |
#   What the decision's common case reads for a call to tool name on server
#   (document's arguments): the planned document as the call's decision,
#   in shadow mode's form when the server is in it (lib.shadow), and the
#   server's pinTools mode. Undefined when document is, and when the
#   pinTools mode is one the pin step does not know (a PolicyError).
# custom:
#   memo: true
common(server, name, mode, read_only_hint, destructive_hint) := {"document": doc, "pin_mode": m} if {
	d := document(server, name, mode, read_only_hint, destructive_hint)
	m := pin.mode_of(server)
	config.vocab.pinTools[m]
	doc := _shadowed(server, d)
}

# METADATA
# title: hidden_common
# description: |
#   What the decision's common query reads for a call to a hidden tool
#   name on server: hidden_document in shadow mode's form when the server
#   is in it (lib.shadow; HiddenTool binds, so it stays a deny), and the
#   server's pinTools mode. Undefined when hidden_document is, and when the
#   pinTools mode is one the pin step does not know (a PolicyError).
# custom:
#   memo: true
hidden_common(server, name) := {"document": doc, "pin_mode": m} if {
	d := hidden_document(server, name)
	m := pin.mode_of(server)
	config.vocab.pinTools[m]
	doc := _shadowed(server, d)
}

_shadowed(server, d) := shadow.document(d) if shadow.on(server)

else := d

# METADATA
# title: document
# description: |
#   The decision, less its call, of a call to tool name on server in which
#   the ledger, unknown-arguments, argument-rules and overrides steps find
#   nothing (no write budget counts the call, no flow rule may judge it): its write-mode and destructive-floor reasons, the verdict and
#   the server's ConfigLoosened warnings.
#   mode is the caller's write mode or null; read_only_hint and
#   destructive_hint are the tool's annotations (false and true, the MCP
#   defaults, when absent). Undefined for a hidden tool and when the config
#   is unusable for the tool.
# custom:
#   memo: true
document(server, name, mode, read_only_hint, destructive_hint) := {
	"outcome": outcome,
	"step": step,
	"reasons": array.concat(denies, asks),
	"warnings": config.loosened_warnings(server),
	"write": write,
	"destructive": is_destructive,
} if {
	f := tool.facts(server, name)
	_usable(f)
	not f.hidden
	write := true in {read_only_hint != true, f.write}
	is_destructive := {write, destructive_hint != false} == {true}
	_unbudgeted(f, write)
	f.flow_judged == false
	m := config.effective_write_mode(f.write_mode, mode)
	label := sprintf("%s.%s", [server, name])
	denies := [write_mode.denied(server, label) | write; m == "deny"]
	asks := array.concat(
		[write_mode.confirmation(server, label) | write; m == "ask"],
		[destructive.confirmation(label) | config.global.confirmDestructive == true; is_destructive; m != "deny"],
	)
	[outcome, step] := _verdict(denies, asks)
}

# METADATA
# title: hidden_document
# description: |
#   The decision, less its call, of a call to tool name on server when the
#   tool is hidden: a HiddenTool deny and nothing else. Undefined when the
#   tool is not hidden or the config is unusable for it (a PolicyError
#   comes first).
# custom:
#   memo: true
hidden_document(server, name) := {
	"outcome": "deny",
	"step": "hidden",
	"reasons": [hidden.reason(server, name)],
	"warnings": [],
	"write": false,
	"destructive": false,
} if {
	f := tool.facts(server, name)
	_config_loaded
	count(f.problems) == 0
	f.hidden
}

# _unbudgeted: no write budget can count the call (a read, or a tool no
# budget's patterns match), so the budget step finds nothing; a write a
# budget may count is decided by the full check order.
_unbudgeted(_, false)

_unbudgeted(f, true) if count(f.budgets) == 0

_verdict(denies, asks) := ["deny", denies[0].step] if count(denies) > 0

else := ["ask", asks[0].step] if count(asks) > 0

else := ["allow", ""]

# _usable: the config decides the tool's calls (no PolicyError for it) and
# its matched rules are compiled.
_usable(f) if {
	_config_loaded
	count(f.problems) == 0
	count(f.missing_rules) == 0
}

# (a plan is also refused without the codes and vocabularies lib.config
# requires: its reasons are built from them)
_config_loaded if {
	is_object(data.mcpx.config)
	is_object(data.mcpx.codes)
	is_object(data.mcpx.vocab)
}
