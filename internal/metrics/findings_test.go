package metrics_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/metrics"
)

// TestFindingsPerID: findings of budgets, loop breakers and flow rules
// are counted per operator id; a kind outside the closed set is not
// counted, and past MaxFindingIDs ids the rest share "_other".
func TestFindingsPerID(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{})
	m.Finding("flow", "no-exfiltration", "deny", false)
	m.Finding("flow", "no-exfiltration", "deny", false)
	m.Finding("flow", "ask-after-web", "ask", true)
	m.Finding("budget", "fs-writes", "deny", false)
	m.Finding("client-sent", "x", "deny", false)
	for i := range metrics.MaxFindingIDs + 5 {
		m.Finding("loop_breaker", fmt.Sprint("loop-", i), "deny", false)
	}
	text, _ := scrape(t, m, "")
	for _, want := range []string{
		`mcpx_policy_policy_findings_total{id="no-exfiltration",kind="flow",outcome="deny",shadow="false"} 2`,
		`mcpx_policy_policy_findings_total{id="ask-after-web",kind="flow",outcome="ask",shadow="true"} 1`,
		`mcpx_policy_policy_findings_total{id="fs-writes",kind="budget",outcome="deny",shadow="false"} 1`,
		`mcpx_policy_policy_findings_total{id="_other",kind="loop_breaker",outcome="deny",shadow="false"} 8`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the exposition lacks %s", want)
		}
	}
	if strings.Contains(text, "client-sent") {
		t.Errorf("a kind outside the closed set became a label")
	}
}
