package mcpxpolicy_test

import (
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
)

// TestParseDecisionIsAboutTheCall: a stock OPA's answer is read for the
// call the gateway asked about: an answer about another server, another
// tool or another call of the same tool (its call.sha256) is an error,
// which the gateway turns into a deny.
func TestParseDecisionIsAboutTheCall(t *testing.T) {
	t.Parallel()
	eng, done := exampleEngine(exampleConfig)
	defer done()
	call := decision.Call{Server: "fs", Tool: decision.Tool{Name: "read_file"}, Args: map[string]any{"path": "/a"}}
	sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := decision.CallSHA256("fs", "read_file", map[string]any{"path": "/b"})
	answer := func(server, tool, sha string) []byte {
		return []byte(`{"outcome":"allow","reasons":[],"warnings":[],"write":false,"destructive":false,"call":{"server":"` + server + `","tool":"` + tool + `","sha256":"` + sha + `"}}`)
	}
	if d, err := eng.ParseDecision(call, answer("fs", "read_file", sum)); err != nil || d.Outcome != decision.Allow {
		t.Fatalf("the call's own answer: %+v %v", d, err)
	}
	for name, a := range map[string][]byte{
		"another server":         answer("git", "read_file", sum),
		"another tool":           answer("fs", "write_file", sum),
		"another call of a tool": answer("fs", "read_file", other),
	} {
		if _, err := eng.ParseDecision(call, a); err == nil || !strings.Contains(err.Error(), "the decision is about") {
			t.Errorf("%s: %v; want an error", name, err)
		}
	}
}
