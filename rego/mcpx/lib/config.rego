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

problems contains sprintf("write mode %s is not ask, allow or deny", [json.marshal(m)]) if {
	some m in _write_modes
	not m in {"ask", "allow", "deny"}
}

problems contains sprintf("unknownArgs mode %s is not warn, reject or off", [json.marshal(m)]) if {
	some m in _unknown_args_modes
	not m in {"warn", "reject", "off"}
}

_write_modes contains data.mcpx.config.write

_write_modes contains s.write if some s in data.mcpx.config.servers

_unknown_args_modes contains data.mcpx.config.unknownArgs

_unknown_args_modes contains s.unknownArgs if some s in data.mcpx.config.servers

_unknown_args_modes contains e.mode if some e in data.mcpx.config.pool.unknownArgsTools

_unknown_args_modes contains e.mode if {
	some s in data.mcpx.config.servers
	some e in s.unknownArgsTools
}

# pool holds the patterns and rules that apply to every server.
default pool := {}

pool := data.mcpx.config.pool

# facts are the config's facts about the call's tool (lib.tool.facts).
facts := tool.facts(req.doc.server, req.doc.tool)

# write_mode is the effective write mode: the caller's resolved mode, else
# the server's writePolicy, else policy.write, else ask.
write_mode := object.get({"null": facts.write_mode}, type_name(req.doc.mode), req.doc.mode)

# unknown_args_mode resolves the unknown-arguments mode for the call's tool:
# the server's tool patterns, then the pool's, then the server's mode, then
# policy.unknownArgs, then warn. Within a list the last match wins.
unknown_args_mode := facts.unknown_args_mode
