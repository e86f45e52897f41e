# METADATA
# title: Step 5 — write mode
# description: |
#   A write is denied, asked or allowed by the effective write mode: the
#   server's writePolicy, else policy.write, else ask, tightened by the
#   input's mode when that one is stricter (it never loosens). Reads always
#   pass.
package mcpx.steps.write_mode

import data.mcpx.lib.call
import data.mcpx.lib.config
import data.mcpx.lib.req

# METADATA
# title: WriteDenied
# custom:
#   code: WriteDenied
deny contains {
	"code": "WriteDenied",
	"step": "write_mode",
	"message": sprintf("%s is a write and writes to %s are denied (write mode deny)", [call.label, req.doc.server]),
	"details": {"mode": "deny"},
} if {
	call.write
	config.write_mode == "deny"
}

# METADATA
# title: WriteNeedsConfirmation
# custom:
#   code: WriteNeedsConfirmation
ask contains {
	"code": "WriteNeedsConfirmation",
	"step": "write_mode",
	"message": sprintf("%s is a write and writes to %s need confirmation (write mode ask)", [call.label, req.doc.server]),
	"details": {"mode": "ask"},
} if {
	call.write
	config.write_mode == "ask"
}
