package render

import (
	"os"
	"strings"
	"testing"
)

// TestClearReasonTiesTheRego: the clear command the policy names when its
// caller gives none (rego/mcpx/steps/ledger.rego, a stock OPA's) carries
// the same --reason as the ones Commands spells, so respell recognizes it
// and an operator sees one placeholder.
func TestClearReasonTiesTheRego(t *testing.T) {
	src, err := os.ReadFile("../../rego/mcpx/steps/ledger.rego")
	if err != nil {
		t.Fatal(err)
	}
	want := `sprintf("mcpx-policy writes clear %s --reason ` + shellQuote(ClearReason) + `", [req.doc.server])`
	if !strings.Contains(string(src), want) {
		t.Errorf("ledger.rego's default clear command is not\n%s", want)
	}
	if got := bareClear("fs"); got != "mcpx-policy writes clear fs --reason '"+ClearReason+"'" {
		t.Errorf("bareClear = %q", got)
	}
}
