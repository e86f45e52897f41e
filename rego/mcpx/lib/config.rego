# METADATA
# title: Compiled configuration
# description: |
#   Reads the operator's compiled config from data.mcpx.config (ADR 0001)
#   and resolves it for the call's server. problems lists what makes the
#   config unusable; any problem makes the decision a PolicyError deny.
package mcpx.lib.config

import data.mcpx.lib.req
import data.mcpx.lib.tool

# global is the whole compiled config ({} when none is loaded).
default global := {}

global := data.mcpx.config

_config_loaded if is_object(data.mcpx.config)

problems contains "data.mcpx.config is missing: load a compiled config" if not _config_loaded

# A mode the call is decided by must be one the steps know: an unknown one
# would pass both the deny and the ask test. The tool's facts check the
# call's own modes (the loader refuses any bad mode at load time; this
# guards data that did not come from it); a scan of every server's modes
# on every query was a third of a stock OPA's decision on the L workload.
problems contains p if some p in facts.problems

# pool holds the patterns and rules that apply to every server.
default pool := {}

pool := data.mcpx.config.pool

# facts are the config's facts about the call's tool (lib.tool.facts).
facts := tool.facts(req.call.server, req.call.tool)

# write_mode is the effective write mode: the mode the config gives the
# call's server (its writePolicy, else policy.write, else ask), tightened by
# the input's mode when that one is stricter (deny > ask > allow). The
# caller may only tighten: a "mode": "allow" in the input never loosens a
# configured ask or deny, on the embedded engine and on a stock OPA alike.
write_mode := effective_write_mode(facts.write_mode, req.doc.mode)

# effective_write_mode is the configured mode, or the caller's when that
# one is stricter (null or an unknown mode never is).
effective_write_mode(configured, caller) := caller if {
	_strictness[caller] > _strictness[configured]
} else := configured

# _strictness orders the write modes, the strictest highest.
_strictness := {"allow": 0, "ask": 1, "deny": 2}

# unknown_args_mode resolves the unknown-arguments mode for the call's tool:
# the server's tool patterns, then the pool's, then the server's mode, then
# policy.unknownArgs, then warn. Within a list the last match wins.
unknown_args_mode := facts.unknown_args_mode
