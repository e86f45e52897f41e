package render

import (
	"fmt"
	"strings"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
)

// CLI renders d as the text a person reads on a terminal (stderr): a first
// line with the outcome, the call and the deciding code, then every reason
// as "CODE: message" with its violations one per line beneath it, the
// warnings, the call's sha256 and the deciding code's doc page. A hidden
// tool is one line with mcpx's HiddenTool text and nothing else. The text
// ends with a newline. `--format json` does not use it: it prints the
// redacted decision document.
//
// In shadow mode (docs/check-order.md#shadow-mode) a call the policy
// refused but shadow mode let through reads "allow CALL: shadow mode let it
// through", then "enforced: " and the text of the policy's own decision; a
// refusal that holds in shadow mode says so under its reasons, and what
// the policy decided when that was more.
func CLI(r redact.Decision) string { return cli(r.Doc()) }

// cli is CLI of the redacted decision document d.
func cli(d decision.Decision) string {
	var b strings.Builder
	if d.Relaxed() && d.Outcome == decision.Allow {
		fmt.Fprintf(&b, "allow %s: shadow mode let it through\n  enforced: %s", callName(d.Call), cli(d.Enforced()))
		return b.String()
	}
	first := d.First()
	if d.Outcome != decision.Allow && first.Code == decision.HiddenTool {
		fmt.Fprintf(&b, "deny %s: %s (HiddenTool)\n", callName(d.Call), hiddenMessage(d.Call.Server, d.Call.Tool))
		return b.String()
	}
	outcome := d.Outcome
	if outcome.Severity() == 2 {
		outcome = decision.Deny
	}
	switch {
	case outcome == decision.Allow:
		fmt.Fprintf(&b, "allow %s\n", callName(d.Call))
	case first.Code == "":
		fmt.Fprintf(&b, "%s %s: %s (%s)\n", outcome, callName(d.Call), decision.PolicyError.Info().Title, decision.PolicyError)
	default:
		fmt.Fprintf(&b, "%s %s: %s (%s, step %s)\n", outcome, callName(d.Call), first.Code.Info().Title, first.Code, d.Step)
	}
	for _, r := range d.Reasons {
		fmt.Fprintf(&b, "  %s: %s\n", r.Code, r.Message)
		for _, v := range r.Violations {
			fmt.Fprintf(&b, "    %s\n", violationLine(v))
		}
		if r.Code == decision.UnknownOutcomePending {
			if c := stringIn(r.Details, "clear", "clear_command", "command"); c != "" {
				fmt.Fprintf(&b, "    clear with: %s\n", c)
			}
		}
		if r.Code == decision.ToolDefinitionChanged {
			if c := stringIn(r.Details, "accept"); c != "" {
				fmt.Fprintf(&b, "    accept with: %s\n", c)
			}
		}
		if r.Code == decision.LedgerUnreadable {
			if c := stringIn(r.Details, "writes"); c != "" {
				fmt.Fprintf(&b, "    see why with: %s\n", c)
			}
		}
	}
	for _, w := range d.Warnings {
		fmt.Fprintf(&b, "  warning %s: %s\n", w.Code, w.Message)
	}
	switch {
	case d.Shadow == nil || outcome == decision.Allow:
	case d.Relaxed():
		e := d.Enforced().First()
		fmt.Fprintf(&b, "  shadow mode: only the reasons above hold; enforced, the policy's %s would stand (%s, step %s)\n", d.Shadow.Outcome, e.Code, d.Shadow.Step)
	default:
		fmt.Fprintf(&b, "  shadow mode: %s holds in shadow mode too\n", first.Code)
	}
	if d.Call.SHA256 != "" {
		fmt.Fprintf(&b, "  call sha256: %s\n", d.Call.SHA256)
	}
	if outcome != decision.Allow && first.Code != "" {
		fmt.Fprintf(&b, "  see %s\n", first.Code.Info().Doc)
	}
	return b.String()
}
