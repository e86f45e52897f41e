package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// TestBudgetsCompile: budgets of the pool and of a server become
// data.mcpx.config.budgets (by id) and their scope's pattern set, and
// Compiled.Budgets for the Engine, with their defaults (writes all, per
// server, every tool).
func TestBudgetsCompile(t *testing.T) {
	t.Parallel()
	c, err, _ := load(t, map[string]string{"main.yaml": `version: 1
pool:
  budgets:
    - {id: any-writes, max: 100, window: 1h}
servers:
  fs:
    budgets:
      - id: fs-deletes
        tools: [delete_file, "move_*"]
        writes: destructive
        max: 20
        window: 90s
        per: principal
`}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := jsonOf(t, get(t, configData(t, c), "budgets"))
	for _, want := range []string{`"fs-deletes":{"description":"","max":20,"origin":"main.yaml:8","per":"principal","window":"90s","window_seconds":90,"writes":"destructive"}`,
		`"any-writes":{"description":"","max":100,"origin":"main.yaml:4","per":"server","window":"1h","window_seconds":3600,"writes":"all"}`} {
		if !strings.Contains(got, want) {
			t.Errorf("budgets data %s\nlacks %s", got, want)
		}
	}
	if got := jsonOf(t, get(t, configData(t, c), "servers", "fs", "budgets")); got != `{"exact":{"delete_file":["fs-deletes"]},"regex":[{"re":"(?s)^move_.*$","source":"move_*","values":["fs-deletes"]}]}` {
		t.Errorf("fs budgets patterns %s", got)
	}
	if got := jsonOf(t, get(t, configData(t, c), "pool", "budgets")); got != `{"exact":{},"regex":[{"re":"(?s)^.*$","source":"*","values":["any-writes"]}]}` {
		t.Errorf("pool budgets patterns %s", got)
	}
	if len(c.Budgets) != 2 || c.Budgets[1].ID != "fs-deletes" || c.Budgets[1].Window != 90*time.Second || c.Budgets[1].Server != "fs" || c.Budgets[0].Server != "" {
		t.Errorf("Compiled.Budgets = %+v", c.Budgets)
	}
	b := c.Budgets[1]
	for _, tc := range []struct {
		server, tool       string
		write, destructive bool
		want               bool
	}{
		{"fs", "delete_file", true, true, true},
		{"fs", "move_file", true, true, true},
		{"fs", "delete_file", true, false, false}, // not destructive
		{"fs", "delete_file", false, false, false},
		{"git", "delete_file", true, true, false},
		{"fs", "write_file", true, true, false},
	} {
		if got := b.Matches(tc.server, tc.tool, tc.write, tc.destructive); got != tc.want {
			t.Errorf("Matches(%v) = %v", tc, got)
		}
	}
	if c.LongestBudgetWindow() != time.Hour {
		t.Errorf("LongestBudgetWindow = %v", c.LongestBudgetWindow())
	}
}

// TestBudgetErrors: every bad budget is a load error with file and line;
// ids are unique across the config, including across layers.
func TestBudgetErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ budget, want string }{
		{`{id: a, max: 0, window: 1h}`, "main.yaml:5: servers.fs.budgets[0].max: want a whole number of writes from 1 to 1000000, got 0"},
		{`{id: a, max: 2.5, window: 1h}`, "servers.fs.budgets[0].max: want a whole number"},
		{`{id: a, max: 3, window: 2d}`, "servers.fs.budgets[0].window: want a duration of whole seconds from 1s to 24h"},
		{`{id: a, max: 3, window: 25h}`, "servers.fs.budgets[0].window: want a duration"},
		{`{id: a, max: 3, window: 1500ms}`, "servers.fs.budgets[0].window: want a duration"},
		{`{id: a, max: 3, window: 1h, per: team}`, "servers.fs.budgets[0].per: want server, principal or session, got \"team\""},
		{`{id: a, max: 3, window: 1h, writes: some}`, "servers.fs.budgets[0].writes: want all or destructive, got \"some\""},
		{`{id: a, max: 3, window: 1h, tools: []}`, "servers.fs.budgets[0].tools: want at least one tool pattern"},
		{`{id: a, max: 3, window: 1h, limit: 3}`, `servers.fs.budgets[0].limit: unknown key "limit"`},
		{`{max: 3, window: 1h}`, "servers.fs.budgets[0]: a budget needs id"},
		{`{id: a, window: 1h}`, "servers.fs.budgets[0]: a budget needs max"},
	} {
		_, err, _ := load(t, map[string]string{"main.yaml": "version: 1\nservers:\n  fs:\n    budgets:\n      - " + tc.budget + "\n"}, config.LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.budget, err, tc.want)
		}
	}
	_, err, _ := load(t, map[string]string{
		"main.yaml":        "version: 1\npool:\n  budgets: [{id: a, max: 3, window: 1h}]\n",
		"conf.d/more.yaml": "version: 1\nservers:\n  fs:\n    budgets: [{id: a, max: 30, window: 1h}]\n",
	}, config.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `duplicate budget id "a"`) {
		t.Errorf("duplicate id across layers: %v", err)
	}
}

// TestLoopBreakersCompile: loop breakers are budgets per exact call,
// with their own keys (no writes, no per) and ids shared with budgets.
func TestLoopBreakersCompile(t *testing.T) {
	t.Parallel()
	c, err, _ := load(t, map[string]string{"main.yaml": `version: 1
servers:
  fs:
    loopBreakers:
      - {id: fs-loops, max: 3, window: 10m}
`}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(t, get(t, configData(t, c), "budgets", "fs-loops")); got != `{"description":"","max":3,"origin":"main.yaml:5","per":"call","window":"10m","window_seconds":600,"writes":"all"}` {
		t.Errorf("loop breaker data %s", got)
	}
	if len(c.Budgets) != 1 || c.Budgets[0].Per != config.BudgetPerCall {
		t.Errorf("Compiled.Budgets %+v", c.Budgets)
	}
	for _, tc := range []struct{ body, want string }{
		{"loopBreakers: [{id: a, max: 3, window: 1h, per: principal}]", `servers.fs.loopBreakers[0].per: unknown key "per"`},
		{"loopBreakers: [{id: a, max: 3, window: 1h, writes: all}]", `servers.fs.loopBreakers[0].writes: unknown key "writes"`},
		{"loopBreakers: [{id: a, max: 3, window: 1h}]\n    budgets: [{id: a, max: 3, window: 1h}]", `duplicate budget id "a"`},
	} {
		_, err, _ := load(t, map[string]string{"main.yaml": "version: 1\nservers:\n  fs:\n    " + tc.body + "\n"}, config.LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
}
