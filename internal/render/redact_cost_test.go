package render_test

import (
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
)

// TestRedactReadsArgumentsOnlyForReasons: the arguments are read for the
// secrets they hold by key name, which only a decision's reasons can
// echo. A decision with none (an allow) is redacted without walking them
// — every allowed call of serve and the proxy is redacted once for its
// log line — and a decision whose reason echoes a secret argument still
// has it redacted.
func TestRedactReadsArgumentsOnlyForReasons(t *testing.T) {
	args := map[string]any{
		"password": "hunter2-correct-horse",
		"content":  strings.Repeat("alpha beta gamma delta ", 40),
		"tags":     []any{"a1", "b2", "c3", "d4"},
		"options":  map[string]any{"force": false, "encoding": "utf-8"},
	}
	ref := decision.CallRef{Server: "s", Tool: "t"}
	allow := decision.Decision{Outcome: decision.Allow, Reasons: []decision.Reason{}, Warnings: []decision.Reason{}, Call: ref}
	if n := testing.AllocsPerRun(20, func() { redact.Redact(allow, args) }); n > 4 {
		t.Errorf("redacting an allow took %.0f allocations: the arguments were walked for nothing", n)
	}
	deny := decision.Denied(ref, decision.ArgumentRuleViolation, "s.t: the password hunter2-correct-horse is refused")
	got := redact.Redact(deny, args)
	if msg := got.First().Message; strings.Contains(msg, "hunter2") {
		t.Errorf("a reason echoing a secret argument was not redacted: %q", msg)
	}
}
