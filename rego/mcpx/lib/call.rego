# METADATA
# title: Call classification
# description: |
#   Whether the call is a write and whether it is destructive. Annotations
#   are untrusted hints from the server, so an operator's writeTools pattern
#   can force a tool to count as a write; it can never make one a read.
package mcpx.lib.call

import data.mcpx.lib.config
import data.mcpx.lib.patterns
import data.mcpx.lib.req

# write is true iff readOnlyHint is not true or a writeTools pattern matches.
default write := false

write if req.read_only == false

write if patterns.matches(object.get(config.pool, "writeTools", {}), req.tool)

write if patterns.matches(object.get(config.server, "writeTools", {}), req.tool)

# destructive is true iff the call is a write and destructiveHint is not false.
default destructive := false

destructive if {
	write
	req.destructive == true
}

# label names the call in messages: server.tool.
label := sprintf("%s.%s", [req.server, req.tool])
