package mcpx.steps.flow_test

import data.mcpx
import data.mcpx.steps.flow
import data.mcpx.testdata

# _config is the fixtures' config with labels — fetch reads untrusted
# content, read_file private data on fs, post and fetch send data out, and
# every open-world tool of fs is "network" — and three flow rules.
_config := object.union(testdata.config, {
	"pool": object.union(object.get(testdata.config, "pool", {}), {"labels": {
		"tools": {"exact": {"fetch": ["untrusted-input", "egress"], "post": ["egress"]}, "regex": []},
		"openWorld": [],
	}}),
	"servers": {"fs": object.union(testdata.config.servers.fs, {"labels": {
		"tools": {"exact": {"read_file": ["private-data"]}, "regex": []},
		"openWorld": ["network"],
	}})},
	"flows": {
		"ask-after-web": {"server": "", "after": ["untrusted-input"], "calls": ["egress"], "then": "ask", "origin": "c.yaml:10", "description": ""},
		"no-exfil": {"server": "", "after": ["private-data", "untrusted-input"], "calls": ["egress"], "then": "deny", "origin": "c.yaml:14", "description": ""},
		"fs-network": {"server": "fs", "after": ["untrusted-input"], "calls": ["network"], "then": "deny", "origin": "c.yaml:20", "description": ""},
	},
})

_tool(name, open_world) := {
	"name": name,
	"annotations": {"readOnlyHint": true, "openWorldHint": open_world},
	"inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
}

_call(server, tool, labels) := object.union(testdata.call(server, tool, {"path": "/workspace/a"}), {"ledger": {"entries": [], "total": 0, "labels": labels}})

_decide(inp) := d if {
	d := mcpx.decision with input as inp
		with data.mcpx.config as _config
		with data.mcpx.overrides.deny as set()
		with data.mcpx.overrides.ask as set()
}

test_labels_of_the_call if {
	{"untrusted-input", "egress"} == data.mcpx.lib.call.labels with input as _call("web", _tool("fetch", false), []) with data.mcpx.config as _config

	# open-world labels: a hint that is not false gives them (missing: true)
	{"network"} == data.mcpx.lib.call.labels with input as _call("fs", _tool("list", true), []) with data.mcpx.config as _config
	{"network"} == data.mcpx.lib.call.labels with input as _call("fs", {"name": "list", "annotations": {}}, []) with data.mcpx.config as _config
	set() == data.mcpx.lib.call.labels with input as _call("fs", _tool("list", false), []) with data.mcpx.config as _config

	# a server's labels are its own
	set() == data.mcpx.lib.call.labels with input as _call("web", _tool("read_file", false), []) with data.mcpx.config as _config
}

test_nothing_touched_passes if {
	count(flow.deny) == 0 with input as _call("web", _tool("post", false), []) with data.mcpx.config as _config
	count(flow.ask) == 0 with input as _call("web", _tool("post", false), []) with data.mcpx.config as _config
}

test_after_untrusted_egress_asks if {
	r := flow.ask with input as _call("web", _tool("post", false), ["untrusted-input"]) with data.mcpx.config as _config
	count(r) == 1
	some reason in r
	reason.code == "FlowNeedsConfirmation"
	reason.step == "flow"
	reason.details == {"flow": "ask-after-web", "origin": "c.yaml:10", "after": ["untrusted-input"], "calls": ["egress"], "then": "ask"}
	count(flow.deny) == 0 with input as _call("web", _tool("post", false), ["untrusted-input"]) with data.mcpx.config as _config
}

test_every_after_label_is_needed if {
	count(flow.deny) == 0 with input as _call("web", _tool("post", false), ["private-data"]) with data.mcpx.config as _config
	r := flow.deny with input as _call("web", _tool("post", false), ["private-data", "untrusted-input", "other"]) with data.mcpx.config as _config
	some reason in r
	reason.code == "FlowDenied"
	contains(reason.message, "lifted only in a new session")
}

# A server's rule judges that server's calls only.
test_server_rule_is_the_servers if {
	r := flow.deny with input as _call("fs", _tool("list", true), ["untrusted-input"]) with data.mcpx.config as _config
	{x.details.flow | some x in r} == {"fs-network"}
	count(flow.deny) == 0 with input as _call("web", _tool("list", true), ["untrusted-input"]) with data.mcpx.config as _config
}

# No usable touched labels for a call a rule judges denies (fail closed).
test_missing_or_malformed_labels_deny if {
	every ledger in [{"entries": [], "total": 0}, {"entries": [], "total": 0, "labels": "untrusted-input"}, {"entries": [], "total": 0, "labels": [1]}] {
		inp := object.union(testdata.call("web", _tool("post", false), {"path": "/a"}), {"ledger": ledger})
		r := flow.deny with input as inp with data.mcpx.config as _config
		count(r) == 2
		every reason in r {
			reason.code == "FlowDenied"
			contains(reason.message, "fail closed")
		}
	}

	# a call no rule judges needs none
	inp := testdata.call("web", _tool("read_file", false), {"path": "/a"})
	count(flow.deny) == 0 with input as inp with data.mcpx.config as _config
}

# A call carrying a label rules remember is refused when the gateway
# cannot remember it for the session.
test_labels_error_denies_sources if {
	inp := object.union(testdata.call("web", _tool("fetch", false), {"path": "/a"}), {"ledger": {"entries": [], "total": 0, "labels": [], "labels_error": "full"}})
	r := flow.deny with input as inp with data.mcpx.config as _config
	some reason in r
	reason.details == {"labels": ["untrusted-input"], "error": "full"}
	inp2 := object.union(testdata.call("web", _tool("post", false), {"path": "/a"}), {"ledger": {"entries": [], "total": 0, "labels": [], "labels_error": "full"}})
	count(flow.deny) == 0 with input as inp2 with data.mcpx.config as _config
}

# The whole decision: the flow step's deny decides at step flow, its ask
# is kept; a judged call never takes the common path.
test_decision if {
	d := _decide(_call("web", _tool("post", false), ["private-data", "untrusted-input"]))
	d.outcome == "deny"
	d.step == "flow"
	[r.code | some r in d.reasons] == ["FlowDenied", "FlowNeedsConfirmation"]
	a := _decide(_call("web", _tool("post", false), ["untrusted-input"]))
	a.outcome == "ask"
	a.step == "flow"
	ok := _decide(_call("web", _tool("post", false), []))
	ok.outcome == "allow"
	no := _decide(testdata.call("web", _tool("post", false), {"path": "/a"}))
	no.outcome == "deny"
	no.step == "flow"
}

test_shadow_relaxes_the_flow_step if {
	d := mcpx.decision with input as _call("web", _tool("post", false), ["private-data", "untrusted-input"])
		with data.mcpx.config as object.union(_config, {"enforce": "shadow"})
		with data.mcpx.overrides.deny as set()
		with data.mcpx.overrides.ask as set()
	d.outcome == "allow"
	d.shadow.outcome == "deny"
	d.shadow.step == "flow"
}
