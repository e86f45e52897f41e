package render

import (
	"encoding/json"
	"fmt"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
)

// MetaShadow is the `_meta` key of the result of a call that shadow mode
// let through (docs/check-order.md#shadow-mode): it holds the redacted
// decision as it would be if the server enforced, in the shape a refusal's
// _meta["mcpx-policy/decision"] has.
const MetaShadow = "mcpx-policy/shadow"

// ShadowMeta is what AddShadow puts under MetaShadow for d: the redacted
// enforced decision (decision.Decision.Enforced). ok is false when shadow
// mode did not change d (an enforcing server, an allow, a binding deny):
// then nothing is added.
func ShadowMeta(r redact.Decision) (meta decision.Decision, ok bool) { return shadowMeta(r.Doc()) }

func shadowMeta(shown decision.Decision) (meta decision.Decision, ok bool) {
	if !shown.Relaxed() {
		return decision.Decision{}, false
	}
	e := shown.Enforced()
	if e.Warnings == nil {
		e.Warnings = []decision.Reason{}
	}
	return e, true
}

// AddShadow returns the CallToolResult result with
// _meta["mcpx-policy/shadow"] set to ShadowMeta(d), other _meta keys and
// every other field kept; result unchanged when ShadowMeta adds nothing.
// Only _meta changes: content and structuredContent are what the tool
// returned, as they would be without the gate (a model reads content; a
// client validates structuredContent). It fails only when result or its
// _meta is not a JSON object.
func AddShadow(result json.RawMessage, r redact.Decision) (json.RawMessage, error) {
	return AddShadowShown(result, r.Doc())
}

// AddShadowShown is AddShadow of shown, a decision document redacted
// already (what the SDK's Redacted holds).
func AddShadowShown(result json.RawMessage, shown decision.Decision) (json.RawMessage, error) {
	meta, ok := shadowMeta(shown)
	if !ok {
		return result, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(result, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("render: shadow: the result is not a JSON object")
	}
	value, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	if raw, ok := obj["_meta"]; !ok || isNull(raw) {
		obj["_meta"], err = json.Marshal(map[string]json.RawMessage{MetaShadow: value})
		if err != nil {
			return nil, err
		}
	} else if merged, ok := mergeObject(raw, MetaShadow, value); ok {
		obj["_meta"] = merged
	} else {
		return nil, fmt.Errorf("render: shadow: the result's _meta is not a JSON object")
	}
	return json.Marshal(obj)
}
