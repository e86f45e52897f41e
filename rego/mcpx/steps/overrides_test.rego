package mcpx.steps.overrides_test

import data.mcpx.steps.overrides
import data.mcpx.testdata

test_deny_finding_becomes_override_deny if {
	r := overrides.deny with data.mcpx.overrides.deny as {{"code": "NoProdOnFriday", "message": "no prod writes on Friday", "ticket": "OPS-1"}}
	r == {{"code": "OverrideDeny", "step": "overrides", "message": "no prod writes on Friday", "details": {"override_code": "NoProdOnFriday", "ticket": "OPS-1"}}}
}

test_ask_finding_becomes_override_ask if {
	r := overrides.ask with data.mcpx.overrides.ask as {{"code": "Night", "message": "after hours"}}
	[x.code | some x in r] == ["OverrideAsk"]
}

test_malformed_finding_still_denies if {
	r := overrides.deny with data.mcpx.overrides.deny as {"just a string"}
	[x.details.override_code | some x in r] == ["MalformedFinding"]
}

test_no_overrides_no_findings if {
	count(overrides.deny) == 0 with data.mcpx.overrides.deny as set()
	count(overrides.ask) == 0 with data.mcpx.overrides.ask as set()
}

test_override_sees_input_and_tightens_allow if {
	d := data.mcpx.decision with input as testdata.call("fs", testdata.read_file, {"path": "/workspace/secrets"})
		with data.mcpx.config as testdata.config
		with data.mcpx.overrides.deny as {{"code": "Secrets", "message": "no reading secrets"}}
		with data.mcpx.overrides.ask as set()
	d.outcome == "deny"
	d.step == "overrides"
}
