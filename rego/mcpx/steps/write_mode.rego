# METADATA
# title: Step 5 — write mode
# description: |
#   A write is denied, asked or allowed by the effective write mode: the
#   server's writePolicy, else policy.write, else ask, tightened by the
#   input's mode when that one is stricter (it never loosens). Reads always
#   pass.
package mcpx.steps.write_mode

import data.mcpx.codes
import data.mcpx.lib.call
import data.mcpx.lib.req

# METADATA
# custom:
#   code: WriteDenied
deny contains denied(req.doc.server, call.label) if {
	call.write
	call.write_mode == "deny"
}

# METADATA
# custom:
#   code: WriteNeedsConfirmation
ask contains confirmation(req.doc.server, call.label) if {
	call.write
	call.write_mode == "ask"
}

# denied and confirmation are this step's reasons for a call labelled label
# on server; lib.plan renders them once per tool with the same functions.
denied(server, label) := {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s is a write and writes to %s are denied (write mode deny)", [label, server]),
	"details": {"mode": "deny"},
} if {
	c := codes.WriteDenied # one read of the data, not two
}

confirmation(server, label) := {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s is a write and writes to %s need confirmation (write mode ask)", [label, server]),
	"details": {"mode": "ask"},
} if {
	c := codes.WriteNeedsConfirmation # one read of the data, not two
}
