package mcpxpolicy

import (
	"os"
	"strings"
	"testing"
)

// TestClearReasonTiesTheRego: the bare clear command the policy names
// (rego/mcpx/steps/ledger.rego, a stock OPA's) carries the same --reason
// as the ones Commands spells, so the answer recognizes it and an operator
// sees one placeholder.
func TestClearReasonTiesTheRego(t *testing.T) {
	src, err := os.ReadFile("rego/mcpx/steps/ledger.rego")
	if err != nil {
		t.Fatal(err)
	}
	want := `sprintf("mcpx-policy writes clear %s --reason ` + shellQuote(clearReason) + `", [req.doc.server])`
	if !strings.Contains(string(src), want) {
		t.Errorf("ledger.rego's clear command is not\n%s", want)
	}
	if got := (Commands{}).WritesClear("fs", "", ""); got != "mcpx-policy writes clear fs --reason '"+clearReason+"'" {
		t.Errorf("WritesClear = %q", got)
	}
}
