# METADATA
# title: Call classification
# description: |
#   Whether the call is a write and whether it is destructive. Annotations
#   are untrusted hints from the server, so an operator's writeTools pattern
#   can force a tool to count as a write; it can never make one a read.
package mcpx.lib.call

import data.mcpx.lib.config
import data.mcpx.lib.req

# write is true iff readOnlyHint is not true or a writeTools pattern matches.
default write := false

write := true in {req.doc.read_only == false, config.facts.write}

# destructive is true iff the call is a write and destructiveHint is not false.
default destructive := false

destructive if {write, req.doc.destructive} == {true}

# label names the call in messages: server.tool.
label := sprintf("%s.%s", [req.call.server, req.call.tool])
