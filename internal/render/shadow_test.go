package render_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/render"
)

// relaxed is a deny that shadow mode turned into an allow, as the policy
// answers it.
func relaxed(t *testing.T, call decision.Call, r decision.Reason) decision.Decision {
	return decision.Decision{Outcome: decision.Allow, Reasons: []decision.Reason{}, Warnings: []decision.Reason{},
		Write: true, Destructive: true, Call: ref(t, call),
		Shadow: &decision.Shadow{Outcome: decision.Deny, Step: r.Step, Reasons: []decision.Reason{r}}}
}

// TestAddShadow: the forwarded result of a call shadow mode let through
// gets the enforced decision in _meta["mcpx-policy/shadow"], its other
// _meta keys and fields kept; content is what the tool returned. A
// decision shadow mode did not change adds nothing.
func TestAddShadow(t *testing.T) {
	t.Parallel()
	call := decision.Call{Server: "fs", Tool: decision.Tool{Name: "write_file"}, Args: map[string]any{"path": "/etc/x"}}
	d := relaxed(t, call, reason(decision.ArgumentRuleViolation, "fs.write_file: /path is outside"))
	result := json.RawMessage(`{"content":[{"type":"text","text":"wrote /etc/x"}],"_meta":{"other":1},"structuredContent":{"ok":true}}`)
	out, err := render.AddShadow(result, redact.Of(d, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Content    []render.Content           `json:"content"`
		Structured map[string]any             `json:"structuredContent"`
		Meta       map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Content) != 1 || got.Content[0].Text != "wrote /etc/x" || got.Structured["ok"] != true || string(got.Meta["other"]) != "1" {
		t.Errorf("the result changed beyond _meta: %s", out)
	}
	var e decision.Decision
	if err := json.Unmarshal(got.Meta[render.MetaShadow], &e); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if e.Outcome != decision.Deny || e.First().Code != decision.ArgumentRuleViolation || e.Shadow != nil || !e.Write || e.Call.Tool != "write_file" {
		t.Errorf("_meta shadow = %+v; want the enforced deny", e)
	}
	for name, res := range map[string]string{"no _meta": `{"content":[]}`, "null _meta": `{"content":[],"_meta":null}`} {
		out, err := render.AddShadow(json.RawMessage(res), redact.Of(d, nil))
		if err != nil || !strings.Contains(string(out), `"_meta":{"mcpx-policy/shadow":{"outcome":"deny"`) {
			t.Errorf("%s: %s %v", name, out, err)
		}
	}
	for name, dd := range map[string]decision.Decision{
		"enforcing":    {Outcome: decision.Deny, Reasons: []decision.Reason{reason(decision.WriteDenied, "no")}},
		"shadow allow": {Outcome: decision.Allow, Shadow: &decision.Shadow{Outcome: decision.Allow}},
		"binding deny": {Outcome: decision.Deny, Reasons: []decision.Reason{reason(decision.HiddenTool, "h")}, Shadow: &decision.Shadow{Outcome: decision.Deny, Reasons: []decision.Reason{reason(decision.HiddenTool, "h")}}},
	} {
		if out, err := render.AddShadow(result, redact.Of(dd, nil)); err != nil || string(out) != string(result) {
			t.Errorf("%s: result changed to %s (%v)", name, out, err)
		}
	}
	if _, err := render.AddShadow(json.RawMessage(`[]`), redact.Of(d, nil)); err == nil {
		t.Error("a result that is not an object was accepted")
	}
	if _, err := render.AddShadow(json.RawMessage(`{"_meta":[1]}`), redact.Of(d, nil)); err == nil {
		t.Error("a _meta that is not an object was accepted")
	}
}

// TestShadowIsRedacted: the decision kept under shadow is redacted like
// the reasons are, on every surface and in _meta.
func TestShadowIsRedacted(t *testing.T) {
	t.Parallel()
	const pw = `Hunter2-"Correct"-Horse`
	call := decision.Call{Server: "db", Tool: decision.Tool{Name: "login"}, Args: map[string]any{"user": "app", "password": pw}}
	q, _ := json.Marshal(pw)
	d := relaxed(t, call, reason(decision.OverrideDeny, fmt.Sprintf("login refused: password %s is banned (%s)", pw, q)))
	d = redact.Redact(d, call.Args)
	outs := map[string]string{}
	for _, s := range []string{render.SurfaceDaemon, render.SurfaceMCP, render.SurfaceCLI} {
		v, err := render.Render(s, call, redact.Of(d, call.Args))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		outs[s] = string(b)
	}
	meta, err := render.AddShadow(json.RawMessage(`{"content":[]}`), redact.Of(d, nil))
	if err != nil {
		t.Fatal(err)
	}
	outs["_meta"] = string(meta)
	assertNoLeak(t, "Correct", outs)
	if !strings.Contains(outs[render.SurfaceDaemon], `"shadow":{"outcome":"deny"`) {
		t.Errorf("the daemon's allow body does not carry the shadow decision: %s", outs[render.SurfaceDaemon])
	}
}

// TestCLIShadow: the CLI says a call went through in shadow mode and what
// the enforced decision would be; a deny that holds in shadow mode says so.
func TestCLIShadow(t *testing.T) {
	t.Parallel()
	call := decision.Call{Server: "fs", Tool: decision.Tool{Name: "write_file"}, Args: map[string]any{}}
	d := relaxed(t, call, reason(decision.ArgumentRuleViolation, "fs.write_file: /path is outside"))
	got := render.CLI(redact.Of(d, nil))
	want := "allow fs.write_file: shadow mode let it through\n  enforced: deny fs.write_file: An argument rule rejects the arguments (ArgumentRuleViolation, step argument_rules)\n  ArgumentRuleViolation: fs.write_file: /path is outside\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("CLI:\n%s\nwant it to start with\n%s", got, want)
	}
	// A deny relaxed to the ask a binding reason keeps (a changed pinned
	// definition's; any ask renders alike).
	keep := reason(decision.OverrideAsk, "fs.write_file: confirm")
	rule := reason(decision.ArgumentRuleViolation, "fs.write_file: /path is outside")
	toAsk := decision.Decision{Outcome: decision.Ask, Step: keep.Step, Reasons: []decision.Reason{keep}, Call: ref(t, call),
		Shadow: &decision.Shadow{Outcome: decision.Deny, Step: rule.Step, Reasons: []decision.Reason{keep, rule}}}
	if got := render.CLI(redact.Of(toAsk, nil)); !strings.HasPrefix(got, "ask fs.write_file") ||
		!strings.Contains(got, "  shadow mode: only the reasons above hold; enforced, the policy's deny would stand (ArgumentRuleViolation, step argument_rules)\n") {
		t.Errorf("CLI of a deny relaxed to an ask:\n%s", got)
	}
	pending := reason(decision.UnknownOutcomePending, "fs.write_file: an earlier write's outcome is unknown")
	held := decision.Decision{Outcome: decision.Deny, Step: decision.StepLedger, Reasons: []decision.Reason{pending}, Call: ref(t, call),
		Shadow: &decision.Shadow{Outcome: decision.Deny, Step: decision.StepLedger, Reasons: []decision.Reason{pending}}}
	if got := render.CLI(redact.Of(held, nil)); !strings.HasPrefix(got, "deny fs.write_file") || !strings.Contains(got, "  shadow mode: UnknownOutcomePending holds in shadow mode too\n") {
		t.Errorf("CLI of a binding deny in shadow mode:\n%s", got)
	}
}
