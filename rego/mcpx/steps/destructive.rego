# METADATA
# title: Step 6 — destructive floor
# description: |
#   With policy.confirmDestructive, a write whose destructiveHint is not
#   false asks even under write mode allow. It never loosens a deny.
package mcpx.steps.destructive

import data.mcpx.codes
import data.mcpx.lib.call
import data.mcpx.lib.config

# METADATA
# custom:
#   code: DestructiveNeedsConfirmation
ask contains confirmation(call.label) if {
	config.global.confirmDestructive == true
	call.destructive
	call.write_mode != "deny"
}

# confirmation is this step's reason for a call labelled label (lib.plan
# renders it once per tool with the same function).
confirmation(label) := {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s may be destructive (destructiveHint is not false) and policy.confirmDestructive asks for every destructive write", [label]),
} if {
	c := codes.DestructiveNeedsConfirmation # one read of the data, not two
}
