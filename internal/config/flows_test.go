package config_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/sweep"
	policy "github.com/mcpx/mcpx-policy/rego"
)

// TestFlowsCompile: labels of the pool and of a server become their
// scope's pattern set and open-world list, flow rules
// data.mcpx.config.flows (by id) and Compiled.Flows; Labels and
// FlowLabels give the Engine what the policy computes.
func TestFlowsCompile(t *testing.T) {
	t.Parallel()
	c, err, _ := load(t, map[string]string{"main.yaml": `version: 1
pool:
  labels:
    - {label: untrusted-input, tools: [fetch, "read_*"]}
    - {label: egress, openWorld: true}
  flows:
    - id: ask-after-web
      after: untrusted-input
      calls: [egress]
      then: ask
servers:
  mail:
    labels:
      - {label: private-data, tools: [read_inbox]}
    flows:
      - {id: mail-no-exfil, after: [untrusted-input, private-data], calls: [egress], then: deny}
`}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(t, get(t, configData(t, c), "flows")); got != `{"ask-after-web":{"after":["untrusted-input"],"calls":["egress"],"description":"","origin":"main.yaml:7","server":"","then":"ask"},"mail-no-exfil":{"after":["private-data","untrusted-input"],"calls":["egress"],"description":"","origin":"main.yaml:16","server":"mail","then":"deny"}}` {
		t.Errorf("flows data %s", got)
	}
	if got := jsonOf(t, get(t, configData(t, c), "pool", "labels")); got != `{"openWorld":["egress"],"tools":{"exact":{"fetch":["untrusted-input"]},"regex":[{"re":"(?s)^read_.*$","source":"read_*","values":["untrusted-input"]}]}}` {
		t.Errorf("pool labels %s", got)
	}
	if got := c.Labels("mail", "read_inbox", false); !slices.Equal(got, []string{"private-data", "untrusted-input"}) {
		t.Errorf("Labels(mail.read_inbox) = %v", got)
	}
	if got := c.Labels("web", "read_inbox", true); !slices.Equal(got, []string{"egress", "untrusted-input"}) {
		t.Errorf("Labels(web.read_inbox, open) = %v", got)
	}
	src, judged := c.FlowLabels("web", []string{"egress", "untrusted-input"})
	if !slices.Equal(src, []string{"untrusted-input"}) || !judged {
		t.Errorf("FlowLabels = %v %v", src, judged)
	}
	if src, judged := c.FlowLabels("web", []string{"private-data"}); !slices.Equal(src, []string{"private-data"}) || judged {
		t.Errorf("FlowLabels(private-data) = %v %v: remembered on every server (a session spans them), judged by no web rule", src, judged)
	}
}

// TestFlowErrors: every bad label or flow rule is a load error with file
// and line; rule ids are unique across layers; a rule naming a label no
// tool is given is an error (a typo would make the rule never fire).
func TestFlowErrors(t *testing.T) {
	t.Parallel()
	labels := "    labels: [{label: egress, tools: [send]}, {label: web, tools: [fetch]}]\n"
	for _, tc := range []struct{ body, want string }{
		{"    labels: [{label: Egress, tools: [send]}]\n", `main.yaml:4: servers.fs.labels[0].label: want a label name (lowercase letters, digits and dashes, starting with a letter, at most 63), got "Egress"`},
		{"    labels: [{label: egress}]\n", "servers.fs.labels[0]: a label entry needs tools, openWorld: true, or both"},
		{"    labels: [{tools: [send]}]\n", "servers.fs.labels[0]: a label entry needs label"},
		{"    labels: [{label: egress, openWorld: false}]\n", "servers.fs.labels[0].openWorld: want true"},
		{"    labels: [{label: egress, tools: []}]\n", "servers.fs.labels[0].tools: want at least one tool pattern"},
		{"    labels: [{label: egress, tools: [send], colour: red}]\n", `servers.fs.labels[0].colour: unknown key "colour"`},
		{labels + "    flows: [{id: a, after: [web], calls: [egress], then: allow}]\n", `main.yaml:5: servers.fs.flows[0].then: want ask or deny, got "allow"`},
		{labels + "    flows: [{id: a, after: [], calls: [egress], then: ask}]\n", "servers.fs.flows[0].after: want at least one label"},
		{labels + "    flows: [{id: a, after: [web], then: ask}]\n", "servers.fs.flows[0]: a flow rule needs calls"},
		{labels + "    flows: [{id: a, after: [web], calls: [egres], then: ask}]\n", `main.yaml:5: servers.fs.flows[0]: flow rule "a" names label "egres", which no labels entry gives to any tool (a typo?)`},
		{labels + "    flows: [{id: a, after: [web], calls: [egress], then: ask, unless: [x]}]\n", `servers.fs.flows[0].unless: unknown key "unless"`},
	} {
		_, err, _ := load(t, map[string]string{"main.yaml": "version: 1\nservers:\n  fs:\n" + tc.body}, config.LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.body, err, tc.want)
		}
	}
	_, err, _ := load(t, map[string]string{
		"main.yaml":        "version: 1\npool:\n" + strings.ReplaceAll(labels, "    labels", "  labels") + "  flows: [{id: a, after: [web], calls: [egress], then: ask}]\n",
		"conf.d/more.yaml": "version: 1\nservers:\n  fs:\n    flows: [{id: a, after: [web], calls: [egress], then: deny}]\n",
	}, config.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `duplicate flow rule id "a"`) {
		t.Errorf("duplicate id across layers: %v", err)
	}
}

// TestFlowsTightenOnly is a property over generated configs: a later
// layer that adds labels or flow rules never turns a deny into an ask or
// an allow, nor an ask into an allow, whatever the tool, its openWorldHint
// and the labels the session touched; and the Engine's Go side (Labels,
// FlowLabels) agrees with the policy's on every generated call.
func TestFlowsTightenOnly(t *testing.T) {
	t.Parallel()
	base, err, _ := load(t, map[string]string{"main.yaml": "version: 1\n"}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := []func(*rego.Rego){
		rego.Query(`d := data.mcpx.decision with data.mcpx.config as input.cfg with input as input.call; labels := data.mcpx.lib.call.labels with data.mcpx.config as input.cfg with input as input.call`),
		rego.Store(inmem.NewFromObject(map[string]any{"mcpx": map[string]any{"codes": base.Data["codes"], "vocab": base.Data["vocab"]}})),
		rego.SetRegoVersion(ast.RegoV1),
		rego.StrictBuiltinErrors(true),
	}
	for name, src := range policy.Modules() {
		opts = append(opts, rego.Module(name, src))
	}
	pq, err := rego.New(opts...).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	labelSet := []string{"la", "lb", "lc", "ld"}
	tools := []string{"t1", "t2", "t3"}
	rnd := rand.New(rand.NewPCG(29, 1))
	pick := func() []string {
		var out []string
		for _, l := range labelSet {
			if rnd.IntN(3) == 0 {
				out = append(out, l)
			}
		}
		if len(out) == 0 {
			out = []string{labelSet[rnd.IntN(len(labelSet))]}
		}
		return out
	}
	labelEntries := func(n int) string {
		var b strings.Builder
		for range n {
			if rnd.IntN(4) == 0 {
				fmt.Fprintf(&b, "    - {label: %s, openWorld: true}\n", labelSet[rnd.IntN(len(labelSet))])
			} else {
				fmt.Fprintf(&b, "    - {label: %s, tools: [%s]}\n", labelSet[rnd.IntN(len(labelSet))], tools[rnd.IntN(len(tools))])
			}
		}
		return b.String()
	}
	// every label is given to some tool in the base, so any rule loads
	allLabels := "  labels:\n    - {label: la, tools: [t9]}\n    - {label: lb, tools: [t9]}\n    - {label: lc, tools: [t9]}\n    - {label: ld, tools: [t9]}\n"
	rule := func(id string) string {
		then := []string{"ask", "deny"}[rnd.IntN(2)]
		return fmt.Sprintf("    - {id: %s, after: [%s], calls: [%s], then: %s}\n", id, strings.Join(pick(), ", "), strings.Join(pick(), ", "), then)
	}
	rank := map[string]int{"allow": 0, "ask": 1, "deny": 2}
	iters := 40
	if !sweep.Full() {
		iters = 12
	}
	checked := 0
	for i := range iters {
		pool := "version: 1\npolicy:\n  write: allow\npool:\n" + allLabels + labelEntries(rnd.IntN(3)) + "  flows:\n"
		for j := range rnd.IntN(3) {
			pool += rule(fmt.Sprintf("base-%d", j))
		}
		if !strings.HasSuffix(pool, "then: ask}\n") && !strings.HasSuffix(pool, "then: deny}\n") {
			pool = strings.TrimSuffix(pool, "  flows:\n")
		}
		later := "version: 1\nservers:\n  srv:\n    labels:\n" + labelEntries(1+rnd.IntN(2)) + "    flows:\n" + rule("later")
		c0, err, _ := load(t, map[string]string{"main.yaml": pool}, config.LoadOptions{})
		if err != nil {
			t.Fatalf("iteration %d: base %v\n%s", i, err, pool)
		}
		c1, err, _ := load(t, map[string]string{"main.yaml": pool, "conf.d/later.yaml": later}, config.LoadOptions{})
		if err != nil {
			t.Fatalf("iteration %d: later %v\n%s", i, err, later)
		}
		for _, tool := range tools {
			for _, open := range []bool{false, true} {
				touched := pick()
				if rnd.IntN(4) == 0 {
					touched = []string{}
				}
				call := map[string]any{"surface": "mcp", "server": "srv", "args": map[string]any{},
					"tool":   map[string]any{"name": tool, "annotations": map[string]any{"readOnlyHint": true, "openWorldHint": open}},
					"ledger": map[string]any{"entries": []any{}, "total": 0, "labels": touched}}
				var outs [2]string
				for k, c := range []*config.Compiled{c0, c1} {
					rs, err := pq.Eval(context.Background(), rego.EvalInput(map[string]any{"cfg": c.Data["config"], "call": call}))
					if err != nil || len(rs) != 1 {
						t.Fatalf("eval: %v %v", rs, err)
					}
					d := rs[0].Bindings["d"].(map[string]any)
					outs[k] = d["outcome"].(string)
					var got []string
					for _, l := range rs[0].Bindings["labels"].([]any) {
						got = append(got, l.(string))
					}
					sort.Strings(got)
					if want := c.Labels("srv", tool, open); !slices.Equal(got, want) {
						t.Fatalf("iteration %d, %s (open %v): the policy's labels %v, Labels %v", i, tool, open, got, want)
					}
					// FlowLabels: judged exactly when the policy's flow step
					// looked at the call (it found something, or nothing to find)
					_, judged := c.FlowLabels("srv", got)
					if d["step"] == "flow" && !judged {
						t.Fatalf("iteration %d: the flow step decided %s.%s but FlowLabels says no rule judges it", i, "srv", tool)
					}
				}
				if rank[outs[1]] < rank[outs[0]] {
					b, _ := json.Marshal(call)
					t.Fatalf("iteration %d: adding\n%s\nloosened %s to %s for %s over\n%s", i, later, outs[0], outs[1], b, pool)
				}
				checked++
			}
		}
	}
	t.Logf("%d calls under %d generated config pairs", checked, iters)
}

// TestCatalogWarnsOfLabels: with a catalog, check reports a label's tool
// pattern that matches no tool the catalog lists (a typo would leave the
// tool unlabelled, and the rules that need its label would never fire).
func TestCatalogWarnsOfLabels(t *testing.T) {
	t.Parallel()
	c, err, dir := load(t, map[string]string{"main.yaml": `version: 1
pool:
  labels:
    - {label: egress, tools: [git_push, send_mail]}
servers:
  fs:
    labels:
      - {label: private-data, tools: ["list_*", write_file]}
      - {label: untrusted-input, openWorld: true}
`, "catalog.json": catalogJSON}, config.LoadOptions{Catalog: "catalog.json"})
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c, dir,
		`main.yaml:4: pool.labels[0].tools[1]: label "egress": tool pattern "send_mail" matches no tool of any server in the catalog`,
		`main.yaml:8: servers.fs.labels[0].tools[0]: label "private-data": tool pattern "list_*" matches no tool of server fs in the catalog`,
	)
}
