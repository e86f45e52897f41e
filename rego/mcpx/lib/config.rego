# METADATA
# title: Compiled configuration
# description: |
#   Reads the operator's compiled config from data.mcpx.config (ADR 0001).
#   problems lists what makes the config unusable; any problem makes the
#   decision a PolicyError deny. A leaf: what the config says about the
#   call's tool is lib.call.facts (lib.tool.facts for the call).
package mcpx.lib.config

# global is the whole compiled config ({} when none is loaded).
default global := {}

global := data.mcpx.config

_config_loaded if is_object(data.mcpx.config)

problems contains "data.mcpx.config is missing: load a compiled config" if not _config_loaded

# The reason codes and the mode vocabularies come with the binary
# (decision's table, internal/config's modes), written into the
# data next to the config: without them no reason could be built, so their
# absence is a PolicyError too.
problems contains "data.mcpx.codes is missing: load a policy built by mcpx-policy" if not is_object(data.mcpx.codes)

problems contains "data.mcpx.vocab is missing: load a policy built by mcpx-policy" if not is_object(data.mcpx.vocab)

# pool holds the patterns and rules that apply to every server.
default pool := {}

pool := data.mcpx.config.pool

# effective_write_mode is the configured mode, or the caller's when that
# one is stricter (null or an unknown mode never is).
effective_write_mode(configured, caller) := caller if {
	_strictness[caller] > _strictness[configured]
} else := configured

# _strictness orders the write modes, the strictest highest.
_strictness := vocab.write

# vocab is data.mcpx.vocab: the values of each kind of mode setting with
# their strictness rank, and the defaults (internal/config's VocabData).
vocab := data.mcpx.vocab

# METADATA
# title: loosened_warnings
# description: |
#   The ConfigLoosened warnings of a decision for server: one for each
#   setting a later config layer made less strict
#   (data.mcpx.config.loosened, internal/config's loosening warnings) that
#   is the server's own or every server's. The message names the setting,
#   both values and both origins; none when no layer loosened anything.
loosened_warnings(server) := [{
	"code": data.mcpx.codes.ConfigLoosened.code,
	"step": data.mcpx.codes.ConfigLoosened.step,
	"message": l.message,
	"details": {"path": l.path},
} |
	some l in object.get(data.mcpx.config, "loosened", [])
	l.server in {"", server}
]
