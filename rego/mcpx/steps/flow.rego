# METADATA
# title: Step 2c — data-flow rules
# description: |
#   Tools carry labels the operator gives them (labels: by tool pattern,
#   and to every tool whose openWorldHint is not false). A session
#   remembers the labels of the calls it was let make; the gateway puts
#   them in input.ledger.labels (docs/configuration.md, labels and flows).
#   A flow rule judges a call to a tool carrying one of its calls labels
#   once the session has touched every label of its after list: it asks
#   (FlowNeedsConfirmation) or denies (FlowDenied). Fail closed: a rule
#   that judges the call while the input gives no usable touched labels
#   denies, and so does a call that carries a label some rule's after
#   names while the gateway cannot remember it for the session
#   (input.ledger.labels_error). A stock OPA given the same labels decides
#   the same.
package mcpx.steps.flow

import data.mcpx.codes
import data.mcpx.lib.call

# rules are the flow rules of the pool and of the call's server, by id.
rules[id] := r if {
	some id, r in object.get(data.mcpx.config, "flows", {})
	r.server in {"", input.server}
}

# judging are the ids of the rules that judge the call: it carries one of
# their calls labels.
judging contains id if {
	some id, r in rules
	some l in r.calls
	l in call.labels
}

# touched are the labels the session has touched, when the input gives
# them as an array of strings; undefined otherwise.
touched := {l | some l in object.get(input, ["ledger", "labels"], null)} if {
	ls := object.get(input, ["ledger", "labels"], null)
	is_array(ls)
	every l in ls {
		is_string(l)
	}
}

# fired are the ids of the judging rules whose after labels were all
# touched.
fired contains id if {
	some id in judging
	every l in rules[id].after {
		l in touched
	}
}

# METADATA
# custom:
#   code: FlowDenied
deny contains {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s: flow rule %q (%s) denies calls to tools labelled %s once the session has touched %s, and this session has; it is lifted only in a new session, or by an operator changing the rule or the tool's labels", [
		call.label, id, r.origin, _list(_hit(r)), _list(r.after),
	]),
	"details": _details(id, r),
} if {
	some id in fired
	r := rules[id]
	r.then == "deny"
	c := codes.FlowDenied
}

# METADATA
# custom:
#   code: FlowDenied
deny contains {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s: flow rule %q (%s) judges this call but the gateway gave no usable record of the labels the session touched, so the call is refused (fail closed)", [call.label, id, rules[id].origin]),
	"details": {"flow": id},
} if {
	some id in judging
	not touched
	c := codes.FlowDenied
}

# METADATA
# custom:
#   code: FlowDenied
deny contains {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s: this call carries labels %s that flow rules remember, and the gateway cannot remember them for this session (%s), so the call is refused (fail closed); it can pass once the gateway has room for the session again", [call.label, _list(_sources), input.ledger.labels_error]),
	"details": {"labels": sort(_sources), "error": input.ledger.labels_error},
} if {
	is_string(object.get(input, ["ledger", "labels_error"], null))
	count(_sources) > 0
	c := codes.FlowDenied
}

# METADATA
# custom:
#   code: FlowNeedsConfirmation
ask contains {
	"code": c.code,
	"step": c.step,
	"message": sprintf("%s: flow rule %q (%s) asks before a call to a tool labelled %s once the session has touched %s, and this session has", [
		call.label, id, r.origin, _list(_hit(r)), _list(r.after),
	]),
	"details": _details(id, r),
} if {
	some id in fired
	r := rules[id]
	r.then == "ask"
	c := codes.FlowNeedsConfirmation
}

# _sources are the call's labels that some rule (of any server: a session
# spans servers) has in its after list.
_sources contains l if {
	some r in object.get(data.mcpx.config, "flows", {})
	some l in r.after
	l in call.labels
}

_hit(r) := [l | some l in r.calls; l in call.labels]

_details(id, r) := {"flow": id, "origin": r.origin, "after": r.after, "calls": _hit(r), "then": r.then}

_list(ls) := concat(", ", [sprintf("%q", [l]) | some l in ls])
