package mcpx.steps.pin_test

import data.mcpx
import data.mcpx.steps.pin
import data.mcpx.testdata

_pinned := "1111111111111111111111111111111111111111111111111111111111111111"

_now := "2222222222222222222222222222222222222222222222222222222222222222"

_changed := {"status": "changed", "pinned_sha256": _pinned, "sha256": _now, "changed": ["description", "annotations"]}

# _config sets pinTools: pool_mode on the pool and server_mode on fs (null
# leaves either unset).
_config(pool_mode, server_mode) := object.union(testdata.config, {
	"pool": object.union(testdata.config.pool, {"pinTools": pool_mode | pool_mode != null}),
	"servers": {"fs": object.union(testdata.config.servers.fs, {"pinTools": server_mode | server_mode != null})},
})

_with_pin(call, p) := object.union(call, {"tool": object.union(call.tool, {"pin": p})})

_read(server, p) := _with_pin(testdata.call(server, testdata.read_file, {"path": "/workspace/a"}), p)

_decide(doc, cfg) := d if {
	d := mcpx.decision with input as doc with data.mcpx.config as cfg with data.mcpx.overrides.deny as set() with data.mcpx.overrides.ask as set()
}

# The mode: a server's own, else the pool's, else off.
test_mode_resolution if {
	every c in [
		{"pool": null, "server": null, "on": "fs", "want": "off"},
		{"pool": "ask", "server": null, "on": "fs", "want": "ask"},
		{"pool": "ask", "server": "deny", "on": "fs", "want": "deny"},
		{"pool": "deny", "server": "off", "on": "fs", "want": "off"},
		{"pool": "deny", "server": "off", "on": "git", "want": "deny"},
	] {
		pin.mode == c.want with input as _read(c.on, _changed) with data.mcpx.config as _config(c.pool, c.server)
	}
}

# Parameterized: mode and pin status -> the step's denies, asks and
# problems, by code.
test_findings if {
	every c in [
		{"mode": "deny", "pin": _changed, "deny": 1, "ask": 0, "problems": 0},
		{"mode": "ask", "pin": _changed, "deny": 0, "ask": 1, "problems": 0},
		{"mode": "off", "pin": _changed, "deny": 0, "ask": 0, "problems": 0},
		{"mode": "deny", "pin": {"status": "ok", "sha256": _now, "pinned_sha256": _now}, "deny": 0, "ask": 0, "problems": 0},
		{"mode": "ask", "pin": {"status": "new", "sha256": _now}, "deny": 0, "ask": 0, "problems": 0},
		{"mode": "ask", "pin": {"status": "error", "error": "pins.json is unreadable"}, "deny": 1, "ask": 0, "problems": 0},
		{"mode": "deny", "pin": {"status": "error", "error": "disk full"}, "deny": 1, "ask": 0, "problems": 0},
		{"mode": "deny", "pin": null, "deny": 0, "ask": 0, "problems": 1},
		{"mode": "ask", "pin": "changed", "deny": 0, "ask": 0, "problems": 1},
		{"mode": "ask", "pin": {"status": "different"}, "deny": 0, "ask": 0, "problems": 1},
		{"mode": "ask", "pin": {"status": "changed", "sha256": "abc", "pinned_sha256": _pinned}, "deny": 0, "ask": 1, "problems": 1},
		{"mode": "ask", "pin": object.union(_changed, {"changed": [1]}), "deny": 0, "ask": 1, "problems": 1},
		{"mode": "deny", "pin": {"status": "error"}, "deny": 1, "ask": 0, "problems": 1},
		{"mode": "off", "pin": null, "deny": 0, "ask": 0, "problems": 0},
		{"mode": "off", "pin": "anything", "deny": 0, "ask": 0, "problems": 0},
	] {
		_counts(c)
	}
}

_counts(c) if {
	doc := _input_for(c.pin)
	cfg := _config(null, c.mode)
	count(pin.deny) == c.deny with input as doc with data.mcpx.config as cfg
	count(pin.ask) == c.ask with input as doc with data.mcpx.config as cfg
	count(pin.problems) == c.problems with input as doc with data.mcpx.config as cfg
}

_input_for(null) := testdata.call("fs", testdata.read_file, {"path": "/workspace/a"})

_input_for(p) := _read("fs", p) if p != null

# A changed definition's reason names the tool, both hashes, the changed
# fields and the exact accept command.
test_changed_reason if {
	r := pin.deny with input as _read("fs", _changed) with data.mcpx.config as _config(null, "deny")
	some reason in r
	reason.code == "ToolDefinitionChanged"
	reason.step == "pin"
	reason.message == sprintf("fs.read_file: the tool's definition changed since it was pinned (description, annotations changed; pinned sha256 111111111111, now 222222222222); refused until an operator reviews the change and accepts it with: mcpx-policy pins accept fs read_file --sha256 %s", [_now])
	reason.details == {
		"mode": "deny", "pinned_sha256": _pinned, "sha256": _now, "changed": ["description", "annotations"],
		"accept": sprintf("mcpx-policy pins accept fs read_file --sha256 %s", [_now]),
	}
}

test_ask_reason_says_a_person_may_confirm if {
	r := pin.ask with input as _read("fs", _changed) with data.mcpx.config as _config(null, "ask")
	some reason in r
	contains(reason.message, "; a person confirms this call, or an operator reviews the change and accepts it with: mcpx-policy pins accept fs read_file --sha256 ")
	reason.details.mode == "ask"
}

# Names a shell would split are quoted in the command, as the SDK's
# Commands quotes them.
test_accept_command_quotes if {
	doc := _with_pin(testdata.call("my server", {"name": "it's"}, {}), _changed)
	cmd := pin.accept_command with input as doc with data.mcpx.config as _config("deny", null)
	cmd == sprintf(`mcpx-policy pins accept 'my server' 'it'\''s' --sha256 %s`, [_now])
}

# The reason names the bare command in both modes, in the message and in
# details.accept: the answer spells it with the state dir of the process
# that decided.
test_accept_command_is_bare_in_both_modes if {
	want := sprintf("mcpx-policy pins accept fs read_file --sha256 %s", [_now])
	doc := _read("fs", _changed)
	every c in [{"mode": "deny", "rule": "deny"}, {"mode": "ask", "rule": "ask"}] {
		rs := object.get({"deny": pin.deny, "ask": pin.ask}, c.rule, set()) with input as doc with data.mcpx.config as _config(null, c.mode)
		_names_accept(rs, want)
	}
}

# _names_accept holds when a reason of rs names want in details.accept and
# at the end of its message.
_names_accept(rs, want) if {
	some reason in rs
	reason.details.accept == want
	endswith(reason.message, concat("", ["accepts it with: ", want]))
}

# Whatever else input.tool.pin holds (an older gateway's "accept"
# included), the reason names the bare command.
test_accept_command_ignores_the_input if {
	want := sprintf("mcpx-policy pins accept fs read_file --sha256 %s", [_now])
	every accept in [null, "", 3, ["x"], {"cmd": "x"}, sprintf("mcpx-policy pins accept fs read_file --sha256 %s --state-dir /x", [_now])] {
		doc := _read("fs", object.union(_changed, {"accept": accept}))
		r := pin.deny with input as doc with data.mcpx.config as _config(null, "deny")
		_names_accept(r, want)
	}
}

test_error_reason if {
	r := pin.deny with input as _read("fs", {"status": "error", "error": "pins.json is unreadable"}) with data.mcpx.config as _config(null, "ask")
	some reason in r
	reason.message == "fs.read_file: the tool's definition cannot be checked against its pin (pins.json is unreadable), so the call is refused until an operator repairs the pin store (see: mcpx-policy pins)"
}

# Whole decisions: the pin check comes first in the order; it keeps every
# other step's findings; a write stays a write under an ask; a hidden tool
# still answers with HiddenTool alone; a missing pin is an InvalidInput and
# an unknown mode a PolicyError.
test_decisions if {
	every c in [
		{
			"name": "changed, deny: decided by the pin",
			"input": _read("fs", _changed), "config": _config(null, "deny"),
			"outcome": "deny", "step": "pin", "codes": ["ToolDefinitionChanged"],
		},
		{
			"name": "changed, ask, a write under deny: the write's deny decides",
			"input": object.union(_with_pin(testdata.call("fs", testdata.write_file, {"path": "/workspace/a", "content": "x"}), _changed), {"mode": "deny"}),
			"config": _config(null, "ask"),
			"outcome": "deny", "step": "write_mode", "codes": ["ToolDefinitionChanged", "WriteDenied"],
		},
		{
			"name": "changed, ask, a read: asks",
			"input": _read("fs", _changed), "config": _config(null, "ask"),
			"outcome": "ask", "step": "pin", "codes": ["ToolDefinitionChanged"],
		},
		{
			"name": "new: passes",
			"input": _read("fs", {"status": "new", "sha256": _now}), "config": _config(null, "deny"),
			"outcome": "allow", "step": "", "codes": [],
		},
		{
			"name": "hidden and changed: hidden alone",
			"input": _with_pin(testdata.call("fs", {"name": "delete_file"}, {}), _changed), "config": _config(null, "deny"),
			"outcome": "deny", "step": "hidden", "codes": ["HiddenTool"],
		},
		{
			"name": "missing pin: invalid input",
			"input": testdata.call("fs", testdata.read_file, {"path": "/workspace/a"}), "config": _config("deny", null),
			"outcome": "deny", "step": "input", "codes": ["InvalidInput"],
		},
		{
			"name": "unknown mode: policy error",
			"input": _read("fs", _changed), "config": _config(null, "sometimes"),
			"outcome": "deny", "step": "input", "codes": ["PolicyError"],
		},
	] {
		_decides(c)
	}
}

_decides(c) if {
	d := _decide(c.input, c.config)
	d.outcome == c.outcome
	d.step == c.step
	[r.code | some r in d.reasons] == c.codes
}

# Pinning off leaves every decision as it was without a pin.
test_off_changes_nothing if {
	every doc in [
		testdata.call("fs", testdata.read_file, {"path": "/workspace/a"}),
		testdata.call("other", testdata.write_file, {"path": "/tmp/a", "content": "x"}),
	] {
		_decide(doc, testdata.config) == _decide(_with_pin(doc, _changed), testdata.config)
	}
}
