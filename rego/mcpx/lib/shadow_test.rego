package mcpx.lib.shadow_test

import data.mcpx
import data.mcpx.lib.shadow
import data.mcpx.testdata

# _shadowed puts the fixture config's fs server in shadow mode (and the
# policy, with policy_mode "shadow").
_shadowed(policy_mode) := json.patch(testdata.config, [
	{"op": "add", "path": "/enforce", "value": policy_mode},
	{"op": "add", "path": "/servers/fs/enforce", "value": "shadow"},
])

_decide(doc, config) := d if {
	d := mcpx.decision with input as doc with data.mcpx.config as config with data.mcpx.overrides.deny as set() with data.mcpx.overrides.ask as set()
}

_pending := {"entries": [{"id": "e1", "server": "fs", "tool": "write_file", "args_sha256": "ab", "time": "t", "surface": "mcp"}]}

test_on_resolves_server_then_policy if {
	shadow.on("fs") with data.mcpx.config as _shadowed("enforce")
	not shadow.on("git") with data.mcpx.config as _shadowed("enforce")
	shadow.on("git") with data.mcpx.config as _shadowed("shadow")
	shadow.on("unconfigured") with data.mcpx.config as _shadowed("shadow")
	not shadow.on("fs") with data.mcpx.config as testdata.config
	not shadow.on("fs") with data.mcpx.config as json.patch(testdata.config, [{"op": "add", "path": "/servers/fs/enforce", "value": "Shadow"}])
	not shadow.on("fs") with data.mcpx.config as json.patch(_shadowed("shadow"), [{"op": "replace", "path": "/servers/fs/enforce", "value": "enforce"}])
}

# Relaxed: the policy's deny or ask is kept under "shadow", the call is an
# allow with no reason; warnings, write, destructive and call stay.
_relaxed := {
	"rule violation": {
		"input": testdata.call("fs", testdata.write_file, {"path": "/etc/passwd", "content": "x"}),
		"outcome": "deny", "step": "argument_rules", "codes": ["ArgumentRuleViolation"],
	},
	"unknown argument rejected": {
		"input": testdata.call("fs", testdata.read_file, {"path": "/workspace/a", "lines": 1, "hed": 2}),
		"outcome": "deny", "step": "unknown_args", "codes": ["UnknownArguments"],
	},
	"caller mode deny": {
		"input": object.union(testdata.call("fs", testdata.write_file, {"path": "/workspace/a"}), {"mode": "deny"}),
		"outcome": "deny", "step": "write_mode", "codes": ["WriteDenied"],
	},
	"write mode ask": {
		"input": object.union(testdata.call("fs", testdata.write_file, {"path": "/workspace/a"}), {"mode": "ask"}),
		"outcome": "ask", "step": "write_mode", "codes": ["WriteNeedsConfirmation"],
	},
}

test_relaxed if {
	every name, c in _relaxed {
		enforced := _decide(c.input, testdata.config)
		d := _decide(c.input, _shadowed("enforce"))
		print(name, d)
		d.outcome == "allow"
		d.step == ""
		d.reasons == []
		d.shadow == {"outcome": c.outcome, "step": c.step, "reasons": enforced.reasons}
		[r.code | some r in d.shadow.reasons] == c.codes
		object.remove(d, {"outcome", "step", "reasons", "shadow"}) == object.remove(enforced, {"outcome", "step", "reasons"})
	}
}

test_relaxed_keeps_warnings_and_write if {
	d := _decide(testdata.call("fs", testdata.write_file, {"path": "/etc/passwd", "content": "x"}), _shadowed("enforce"))
	d.write == true
	d.destructive == true
	d.call.server == "fs"
	w := _decide(testdata.call("git", {"name": "git_log", "annotations": {"readOnlyHint": true}, "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}, {"m": 1}), _shadowed("shadow"))
	w.outcome == "allow"
	[x.code | some x in w.warnings] == ["IgnoredArguments"]
	w.shadow == {"outcome": "allow", "step": "", "reasons": []}
}

test_override_findings_are_relaxed if {
	d := mcpx.decision with input as testdata.call("fs", testdata.read_file, {"path": "/workspace/a"})
		with data.mcpx.config as _shadowed("enforce")
		with data.mcpx.overrides.deny as {{"code": "Z", "message": "no"}}
		with data.mcpx.overrides.ask as set()
	d.outcome == "allow"
	[r.code | some r in d.shadow.reasons] == ["OverrideDeny"]
}

# Binding: the decision stands, with the same copy under "shadow".
_binding := {
	"hidden tool": {
		"input": testdata.call("fs", {"name": "delete_file"}, {}),
		"codes": ["HiddenTool"],
	},
	"pending write": {
		"input": object.union(testdata.call("fs", testdata.write_file, {"path": "/etc/passwd"}), {"ledger": _pending}),
		"codes": ["UnknownOutcomePending", "ArgumentRuleViolation"],
	},
	"unreadable ledger": {
		"input": object.union(testdata.call("fs", testdata.write_file, {"path": "/workspace/a"}), {"ledger": {"entries": [], "error": "corrupt"}}),
		"codes": ["LedgerUnreadable"],
	},
	"malformed call": {
		"input": testdata.call("fs", testdata.read_file, ["x"]),
		"codes": ["InvalidInput"],
	},
	"unknown caller mode": {
		"input": object.union(testdata.call("fs", testdata.read_file, {}), {"mode": "sometimes"}),
		"codes": ["InvalidInput"],
	},
}

test_binding if {
	every name, c in _binding {
		enforced := _decide(c.input, testdata.config)
		d := _decide(c.input, _shadowed("enforce"))
		print(name, d)
		d.outcome == "deny"
		[r.code | some r in d.reasons] == c.codes
		object.remove(d, {"shadow"}) == enforced
		d.shadow == {"outcome": "deny", "step": enforced.step, "reasons": enforced.reasons}
	}
}

_policy_error := _decide(
	testdata.call("fs", testdata.write_file, {"path": "/workspace/a"}),
	json.patch(_shadowed("enforce"), [{"op": "replace", "path": "/servers/fs/write", "value": "maybe"}]),
)

test_policy_error_is_binding if {
	_policy_error.outcome == "deny"
	[r.code | some r in _policy_error.reasons] == ["PolicyError"]
	_policy_error.shadow.outcome == "deny"
}

_pin_doc(outcome, step, reasons) := {
	"outcome": outcome, "step": step, "reasons": reasons,
	"warnings": [], "write": true, "destructive": true, "call": {"server": "fs", "tool": "t", "sha256": ""},
}

_changed := {"code": "ToolDefinitionChanged", "step": "pin", "message": "changed"}

_rule := {"code": "ArgumentRuleViolation", "step": "argument_rules", "message": "outside"}

_write_ask := {"code": "WriteNeedsConfirmation", "step": "write_mode", "message": "ask"}

# A changed pinned definition holds, deny or ask; when it asks and a
# relaxable step denies, the call is an ask on the pin alone.
test_tool_definition_changed_is_binding if {
	deny := _pin_doc("deny", "pin", [_changed, _rule])
	shadow.document(deny) == object.union(deny, {"shadow": {"outcome": "deny", "step": "pin", "reasons": [_changed, _rule]}})
	ask := _pin_doc("ask", "pin", [_changed, _write_ask])
	shadow.document(ask).outcome == "ask"
	shadow.document(ask).reasons == [_changed, _write_ask]
	mixed := _pin_doc("deny", "argument_rules", [_changed, _rule, _write_ask])
	d := shadow.document(mixed)
	d.outcome == "ask"
	d.step == "pin"
	d.reasons == [_changed]
	d.shadow == {"outcome": "deny", "step": "argument_rules", "reasons": [_changed, _rule, _write_ask]}
}

# A server that enforces is answered exactly as before: no "shadow" member.
test_enforcing_server_has_no_shadow if {
	doc := testdata.call("git", testdata.git_push, {"force": true})
	d := _decide(doc, _shadowed("enforce"))
	d == _decide(doc, testdata.config)
	not d.shadow
	d.outcome == "deny"
}

_pin_changed := {"status": "changed", "pinned_sha256": "1111111111111111111111111111111111111111111111111111111111111111", "sha256": "2222222222222222222222222222222222222222222222222222222222222222", "changed": ["description"]}

_pinned_fs(mode) := json.patch(_shadowed("enforce"), [{"op": "add", "path": "/servers/fs/pinTools", "value": mode}])

_changed_write(path) := object.union(
	testdata.call("fs", object.union(testdata.write_file, {"pin": _pin_changed}), {"path": path, "content": "x"}),
	{"mode": "ask"},
)

# Through the pin step: a changed definition denies under pinTools deny and
# asks under ask, in shadow mode too; beside a rule's deny, the ask on the
# pin alone.
test_pin_step_holds_in_shadow if {
	denied := _decide(_changed_write("/workspace/a"), _pinned_fs("deny"))
	denied.outcome == "deny"
	denied.reasons[0].code == "ToolDefinitionChanged"
	asked := _decide(_changed_write("/workspace/a"), _pinned_fs("ask"))
	asked.outcome == "ask"
	asked.step == "pin"
	[r.code | some r in asked.reasons] == ["ToolDefinitionChanged", "WriteNeedsConfirmation"]
	both := _decide(_changed_write("/etc/passwd"), _pinned_fs("ask"))
	both.outcome == "ask"
	[r.code | some r in both.reasons] == ["ToolDefinitionChanged"]
	both.shadow.outcome == "deny"
	both.shadow.step == "argument_rules"
}

_pin_error := {"status": "error", "error": "the pin store cannot be read"}

_pin_through(pin, path) := object.union(
	testdata.call("fs", object.union(testdata.write_file, {"pin": pin}), {"path": path, "content": "x"}),
	{"mode": "ask"},
)

# Through the pin step, what cannot be checked holds too: a pin store that
# cannot be read denies with ToolDefinitionChanged under ask and deny, and
# a caller that leaves the pin out while the server pins is InvalidInput;
# shadow mode keeps both denies, beside a rule's deny as alone.
test_pin_step_unchecked_holds_in_shadow if {
	every mode in ["ask", "deny"] {
		_unchecked_pin_denies(mode)
	}
}

_unchecked_pin_denies(mode) if {
	every path in ["/workspace/a", "/etc/passwd"] {
		err := _decide(_pin_through(_pin_error, path), _pinned_fs(mode))
		err.outcome == "deny"
		err.step == "pin"
		err.reasons[0].code == "ToolDefinitionChanged"
		err.reasons[0].details.error == "the pin store cannot be read"
		object.remove(err, {"shadow"}) == _decide(_pin_through(_pin_error, path), json.patch(_pinned_fs(mode), [{"op": "replace", "path": "/servers/fs/enforce", "value": "enforce"}]))
		err.shadow == {"outcome": "deny", "step": "pin", "reasons": err.reasons}
	}
	missing := _decide(testdata.call("fs", testdata.write_file, {"path": "/workspace/a", "content": "x"}), _pinned_fs(mode))
	missing.outcome == "deny"
	[r.code | some r in missing.reasons] == ["InvalidInput"]
	missing.shadow.outcome == "deny"
}

# Every binding code is shown holding in shadow mode by a test above (the
# decisions of _binding, _policy_error and the pin step's): a code added to
# binding without such a test fails here.
test_every_binding_code_is_tested if {
	decisions := [_policy_error, _decide(_changed_write("/workspace/a"), _pinned_fs("deny"))]
	tested := {code | some c in _binding; some code in c.codes} | {r.code | some d in decisions; some r in d.reasons}
	shadow.binding - tested == set()
}
