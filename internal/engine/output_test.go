package engine

import (
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
)

// TestShadowMemberIsChecked: a decision's shadow member is read and checked
// as the decision is, and it may differ from the outcome only the way
// shadow mode relaxes (an ask in place of a deny, an allow with no reason
// in place of either); anything else is an error, which the engine turns
// into a deny.
func TestShadowMemberIsChecked(t *testing.T) {
	t.Parallel()
	good := []string{
		`{"outcome": "allow", "reasons": [], "shadow": {"outcome": "deny", "step": "argument_rules", "reasons": [{"code": "ArgumentRuleViolation", "step": "argument_rules"}]}}`,
		`{"outcome": "allow", "reasons": [], "shadow": {"outcome": "ask", "step": "write_mode", "reasons": [{"code": "WriteNeedsConfirmation"}]}}`,
		`{"outcome": "deny", "reasons": [{"code": "HiddenTool"}], "shadow": {"outcome": "deny", "step": "hidden", "reasons": [{"code": "HiddenTool"}]}}`,
		`{"outcome": "allow", "reasons": [], "shadow": {"outcome": "allow", "step": ""}}`,
		`{"outcome": "ask", "step": "pin", "reasons": [{"code": "OverrideAsk"}], "shadow": {"outcome": "deny", "step": "argument_rules", "reasons": [{"code": "OverrideAsk"}, {"code": "ArgumentRuleViolation"}]}}`,
	}
	for _, doc := range good {
		d, err := Parse([]byte(doc))
		if err != nil {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		if d.Shadow == nil || d.Shadow.Reasons == nil {
			t.Errorf("%s: shadow %+v; want it read, reasons [] at least", doc, d.Shadow)
		}
	}
	bad := map[string]string{
		`{"outcome": "allow", "reasons": [], "shadow": {"outcome": "deny", "reasons": []}}`:                                                        "shadow: deny without a reason",
		`{"outcome": "allow", "reasons": [], "shadow": {"outcome": "sometimes", "reasons": []}}`:                                                   "shadow: unknown outcome",
		`{"outcome": "allow", "reasons": [], "shadow": {"outcome": "deny", "reasons": [{"code": "NoSuchCode"}]}}`:                                  "shadow: unknown reason code",
		`{"outcome": "deny", "reasons": [{"code": "WriteDenied"}], "shadow": {"outcome": "ask", "reasons": [{"code": "WriteNeedsConfirmation"}]}}`: "only relaxes",
		`{"outcome": "ask", "reasons": [{"code": "WriteNeedsConfirmation"}], "shadow": {"outcome": "allow", "reasons": []}}`:                       "only relaxes",
		`{"outcome": "allow", "reasons": [{"code": "WriteDenied"}], "shadow": {"outcome": "deny", "reasons": [{"code": "WriteDenied"}]}}`:          "only relaxes",
		`{"outcome": "allow", "reasons": [], "shadow": "deny"}`:                                                                                    "shadow",
	}
	for doc, want := range bad {
		if _, err := Parse([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v; want one saying %q", doc, err, want)
		}
	}
	d, err := Parse([]byte(good[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Relaxed() || d.Enforced().Outcome != decision.Deny || d.Enforced().Reasons[0].Code != decision.ArgumentRuleViolation || d.Enforced().Shadow != nil {
		t.Errorf("Relaxed %v, Enforced %+v", d.Relaxed(), d.Enforced())
	}
}
