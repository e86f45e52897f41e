# METADATA
# title: Step 7 — operator overrides
# description: |
#   Operators add findings in package mcpx.overrides with
#   `deny contains finding` and `ask contains finding`. Each becomes an
#   OverrideDeny or OverrideAsk reason carrying the operator's own code,
#   message and details. Overrides can only add findings: they tighten.
package mcpx.steps.overrides

import data.mcpx.codes
import data.mcpx.lib.req
import data.mcpx.lib.text

# METADATA
# custom:
#   code: OverrideDeny
deny contains _reason(codes.OverrideDeny, f) if some f in data.mcpx.overrides.deny

# METADATA
# custom:
#   code: OverrideAsk
ask contains _reason(codes.OverrideAsk, f) if some f in data.mcpx.overrides.ask

# An operator's message and details may quote the call's arguments: they
# are scrubbed of the arguments' secrets (text.secrets_in) and of every
# secret shape, and details are redacted by key name too (text.value).
_reason(code, f) := {
	"code": code.code,
	"step": code.step,
	"message": text.scrub(f.message, _arg_secrets),
	"details": text.value("", object.union(object.remove(f, ["code", "message"]), {"override_code": f.code}), _arg_secrets),
} if {
	is_string(f.code)
	is_string(f.message)
}

# A finding that is not {"code": string, "message": string, …} still counts,
# so a typo in an override fails closed instead of vanishing.
_reason(code, f) := {
	"code": code.code,
	"step": code.step,
	"message": text.scrub(sprintf("malformed override finding %s: want an object with string code and message", [json.marshal(f)]), _arg_secrets),
	"details": {"override_code": "MalformedFinding"},
} if {
	not _well_formed(f)
}

_arg_secrets := text.secrets_in(req.doc.args)

_well_formed(f) if {
	is_string(f.code)
	is_string(f.message)
}
