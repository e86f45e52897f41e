# METADATA
# title: Step 7 — operator overrides
# description: |
#   Operators add findings in package mcpx.overrides with
#   `deny contains finding` and `ask contains finding`. Each becomes an
#   OverrideDeny or OverrideAsk reason carrying the operator's own code,
#   message and details. Overrides can only add findings: they tighten.
package mcpx.steps.overrides

# METADATA
# title: OverrideDeny
# custom:
#   code: OverrideDeny
deny contains _reason("OverrideDeny", f) if some f in data.mcpx.overrides.deny

# METADATA
# title: OverrideAsk
# custom:
#   code: OverrideAsk
ask contains _reason("OverrideAsk", f) if some f in data.mcpx.overrides.ask

_reason(code, f) := {
	"code": code,
	"step": "overrides",
	"message": f.message,
	"details": object.union(object.remove(f, ["code", "message"]), {"override_code": f.code}),
} if {
	is_string(f.code)
	is_string(f.message)
}

# A finding that is not {"code": string, "message": string, …} still counts,
# so a typo in an override fails closed instead of vanishing.
_reason(code, f) := {
	"code": code,
	"step": "overrides",
	"message": sprintf("malformed override finding %s: want an object with string code and message", [json.marshal(f)]),
	"details": {"override_code": "MalformedFinding"},
} if {
	not _well_formed(f)
}

_well_formed(f) if {
	is_string(f.code)
	is_string(f.message)
}
