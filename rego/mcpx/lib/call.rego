# METADATA
# title: Call classification
# description: |
#   What the config says about the call's tool (facts, resolved for the
#   call's server and mode), whether the call is a write and whether it is
#   destructive. Annotations are untrusted hints from the server, so an
#   operator's writeTools pattern can force a tool to count as a write; it
#   can never make one a read.
package mcpx.lib.call

import data.mcpx.lib.config
import data.mcpx.lib.req
import data.mcpx.lib.tool

# facts are the config's facts about the call's tool (lib.tool.facts).
facts := tool.facts(req.call.server, req.call.tool)

# A mode the call is decided by must be one the steps know: an unknown one
# would pass both the deny and the ask test. The tool's facts check the
# call's own modes (the loader refuses any bad mode at load time; this
# guards data that did not come from it); a scan of every server's modes
# on every query was a third of a stock OPA's decision on the L workload.
# Any of these config_problems makes the decision a PolicyError deny.
config_problems contains p if some p in facts.problems

# write_mode is the effective write mode: the mode the config gives the
# call's server (its writePolicy, else policy.write, else ask), tightened by
# the input's mode when that one is stricter (deny > ask > allow). The
# caller may only tighten: a "mode": "allow" in the input never loosens a
# configured ask or deny, on the embedded engine and on a stock OPA alike.
write_mode := config.effective_write_mode(facts.write_mode, req.doc.mode)

# unknown_args_mode resolves the unknown-arguments mode for the call's tool:
# the server's tool patterns, then the pool's, then the server's mode, then
# policy.unknownArgs, then warn. Within a list the last match wins.
unknown_args_mode := facts.unknown_args_mode

# write is true iff readOnlyHint is not true or a writeTools pattern matches.
default write := false

write := true in {req.doc.read_only == false, facts.write}

# destructive is true iff the call is a write and destructiveHint is not false.
default destructive := false

destructive if {write, req.doc.destructive} == {true}

# label names the call in messages: server.tool.
label := sprintf("%s.%s", [req.call.server, req.call.tool])

# labels are the labels the config gives the call's tool: its tool
# patterns' (the pool's and the server's), and those given to every
# open-world tool unless its openWorldHint is false (the MCP default is
# true, and anything but false counts as open: a hint only adds labels).
labels := facts.labels | _open_world_labels

default _open_world_labels := set()

_open_world_labels := facts.open_world_labels if object.get(req.doc.annotations, "openWorldHint", true) != false
