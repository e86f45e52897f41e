package rollout_test

import (
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/rollout"
)

// TestCompareBudgetsAndFlows: a diff without a catalog says which way a
// change to write budgets, flow rules and labels goes: a budget or flow
// rule added tightens and removed loosens, a max raised loosens, a rule's
// then from deny to ask loosens; a label or budget pattern added tightens,
// removed loosens. None of them is an untyped "setting" change.
func TestCompareBudgetsAndFlows(t *testing.T) {
	t.Parallel()
	const base = `version: 1
pool:
  labels:
    - {label: untrusted-input, tools: [fetch]}
    - {label: egress, openWorld: true}
  flows:
    - {id: no-exfil, after: [untrusted-input], calls: [egress], then: deny}
servers:
  fs:
    budgets:
      - {id: fs-writes, tools: [write_file], max: 20, window: 1h}
`
	cases := []struct {
		name string
		new  string
		want []string
	}{
		{"the same config", base, nil},
		{
			name: "a budget raised, a rule softened",
			new:  strings.Replace(strings.Replace(base, "max: 20", "max: 50", 1), "then: deny", "then: ask", 1),
			want: []string{
				`server fs: loosening budget fs-writes: {"description":"","max":20,"origin":"old.yaml:11","per":"server","window":"1h","window_seconds":3600,"writes":"all"} -> {"description":"","max":50,"origin":"new.yaml:11","per":"server","window":"1h","window_seconds":3600,"writes":"all"}`,
				`policy: loosening flow rule no-exfil: {"after":["untrusted-input"],"calls":["egress"],"description":"","origin":"old.yaml:7","server":"","then":"deny"} -> {"after":["untrusted-input"],"calls":["egress"],"description":"","origin":"new.yaml:7","server":"","then":"ask"}`,
			},
		},
		{
			name: "a label taken away, a budget's tools widened, a rule added",
			new: strings.Replace(strings.Replace(base, "    - {label: egress, openWorld: true}\n", "    - {label: egress, tools: [send]}\n", 1),
				"tools: [write_file]", "tools: [write_file, edit_file]", 1) + "    flows:\n      - {id: fs-ask, after: [untrusted-input], calls: [egress], then: ask}\n",
			want: []string{
				`server fs: loosening labels "openWorld: egress" removed`,
				`server fs: tightening labels "send: egress" added`,
				`server fs: tightening budget tools "edit_file: fs-writes" added`,
				`servers neither config names: loosening labels "openWorld: egress" removed`,
				`servers neither config names: tightening labels "send: egress" added`,
				`server fs: tightening flow rule fs-ask added: {"after":["untrusted-input"],"calls":["egress"],"description":"","origin":"new.yaml:13","server":"fs","then":"ask"}`,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			d := rollout.Compare(asWritten(t, dir, "old.yaml", base), asWritten(t, dir, "new.yaml", tc.new))
			got := changeLines(d.Text("old.yaml", "new.yaml", ""))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
