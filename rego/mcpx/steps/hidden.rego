# METADATA
# title: Step 1 — hidden tool
# description: |
#   A tool that matches a hidden pattern of the pool or of its server is
#   denied with HiddenTool, and nothing else is evaluated or reported, so a
#   hidden tool leaks no schema and no rule.
package mcpx.steps.hidden

import data.mcpx.codes
import data.mcpx.lib.call
import data.mcpx.lib.req

default applies := false

applies := call.facts.hidden

# METADATA
# custom:
#   code: HiddenTool
deny contains reason(req.doc.server, req.doc.tool) if applies

# reason is this step's reason for tool on server (lib.plan renders it
# once per tool with the same function).
reason(server, tool) := {
	"code": c.code,
	"step": c.step,
	"message": sprintf("tool %s on %s is hidden by its hiddenTools configuration", [json.marshal(tool), json.marshal(server)]),
} if {
	c := codes.HiddenTool # one read of the data, not two
}
