package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// A call to a tool the engine has met hidden is decided in Go, without an
// evaluation and without the call's ledger (internal/engine/hidden.go).
// The tests below decide generated calls to hidden and visible tools on
// the engine and on the policy as a stock OPA evaluates it, and compare
// the decisions' JSON byte for byte; the calls the fast path decides are
// compared again under every ledger the engine can build, since the Engine
// does not read the ledger for them.

// hiddenConfig hides tools by glob (the pool), by regex (a server), on
// servers that pin tool definitions (ask, deny) and on one in shadow mode.
const hiddenConfig = `version: 1
policy:
  write: ask
  confirmDestructive: true
  unknownArgs: reject
pool:
  hiddenTools: ["admin_*"]
  argumentRules:
    - id: path
      tools: ["*"]
      schema: {"properties": {"path": {"type": "string", "pattern": "^/workspace/"}}}
servers:
  s:
    hiddenTools: ["/^secret_[a-z]+$/"]
  pa:
    pinTools: ask
  pd:
    pinTools: deny
  shadowed:
    enforce: shadow
`

// hiddenLedgers are ledgers the engine builds: none, empty, entries, a
// total above them, unreadable, budget counts, labels and their error.
func hiddenLedgers(pin *engine.Pin) []*engine.Ledger {
	entry := decision.LedgerEntry{ID: "w1", Server: "s", Tool: "admin_x", ArgsSHA256: strings.Repeat("a", 64), Time: "2026-12-01T10:00:00Z", Surface: "mcp"}
	return []*engine.Ledger{
		{Pin: pin},
		{Pin: pin, Entries: []decision.LedgerEntry{entry}, Total: 3},
		{Pin: pin, Unreadable: "corrupt or unreadable; an operator runs 'mcpx-policy writes' to see why"},
		{Pin: pin, Budgets: []engine.BudgetCount{{ID: "b", Count: 9, RetryAt: "2026-12-01T11:00:00Z"}}},
		{Pin: pin, Labels: []string{"secret"}, LabelsError: "no session"},
	}
}

// hiddenCalls are generated calls: hidden and visible tools on every
// server, with caller modes (one the policy does not know), annotations,
// inputSchemas (one that does not convert), pins of every status, and
// arguments plain, long, deep, not canonical or not plain.
func hiddenCalls(n int) []struct {
	call decision.Call
	pin  *engine.Pin
} {
	yes, no := true, false
	servers := []string{"s", "pa", "pd", "shadowed", ""}
	tools := []string{"admin_x", "secret_key", "admin_", "plain", "secret_K", "admin_y"}
	modes := []string{"", "ask", "allow", "deny", "bogus"}
	anns := []*decision.Annotations{nil, {ReadOnlyHint: &yes}, {ReadOnlyHint: &no, DestructiveHint: &no, Title: "t"}}
	schemas := []map[string]any{
		nil,
		{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "n": map[string]any{"maximum": json.Number("10")}}},
		{"properties": map[string]any{"f": func() {}}}, // not JSON: the input cannot be built
		{"enum": []any{1.5, int64(2), nil, true}},
	}
	pins := []*engine.Pin{
		nil,
		{Status: "ok", SHA256: strings.Repeat("b", 64), PinnedSHA256: strings.Repeat("b", 64)},
		{Status: "new", SHA256: strings.Repeat("c", 64)},
		{Status: "changed", SHA256: strings.Repeat("d", 64), PinnedSHA256: strings.Repeat("e", 64), Changed: []string{"description"}},
		{Status: "error", Error: "the pin store cannot be read"},
	}
	args := []map[string]any{
		{},
		{"path": "/workspace/a", "n": 1},
		{"path": "/etc/passwd", "token": "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{"n": json.Number("123456789012345678")}, // not a short decimal
		{"n": json.Number("1e400")},              // no canonical form
		{"n": math.Inf(1)},                       // not JSON
		{"deep": []any{map[string]any{"a": []any{1.25, "x", nil, false}}}},
		{"s": "bad \xff utf-8"},
		{"v": json.Number("-0.5"), "w": int64(7), "x": 3.0},
	}
	out := make([]struct {
		call decision.Call
		pin  *engine.Pin
	}, 0, n)
	for i := 0; i < n; i++ {
		// each choice from its own bits of a mix of i, so that every
		// combination turns up in a sample
		r := uint64(i+1) * 0x9e3779b97f4a7c15
		pick := func(k int) int {
			r ^= r >> 29
			r *= 0xbf58476d1ce4e5b9
			return int(r>>33) % k
		}
		c := decision.Call{
			Server: servers[pick(len(servers))],
			Tool:   decision.Tool{Name: tools[pick(len(tools))], Annotations: anns[pick(len(anns))], InputSchema: schemas[pick(len(schemas))]},
			Args:   args[pick(len(args))],
			Mode:   modes[pick(len(modes))],
		}
		if i%23 == 5 {
			c.Surface = "mcp"
			c.Principal = &decision.Principal{ID: "p", Groups: []string{"g"}}
		}
		out = append(out, struct {
			call decision.Call
			pin  *engine.Pin
		}{c, pins[pick(len(pins))]})
	}
	return out
}

// TestHiddenToolsInGo: every generated call is decided as the Rego
// decides it, and a call to a tool met hidden before, decided in Go, is
// the Rego's decision under every ledger the engine builds.
func TestHiddenToolsInGo(t *testing.T) {
	c := newDecider(t, policyOfYAML(t, hiddenConfig))
	ctx := context.Background()
	const n = 3000
	fast := 0
	for i, hc := range hiddenCalls(n) {
		if !sweep.Take(i) {
			continue
		}
		what := fmt.Sprintf("call %d (%s.%s)", i, hc.call.Server, hc.call.Tool.Name)
		// the Go form of well_formed the fast path asks implies the
		// evaluation's on the input it would read
		if f, s := c.eng.WellFormedCall(hc.call, &engine.Ledger{Pin: hc.pin}); f && !s {
			t.Errorf("%s: wellFormedCall holds, wellFormed does not", what)
		}
		leds := hiddenLedgers(hc.pin)
		c.check(t, what, hc.call, leds[i%len(leds)])
		d, ok := c.eng.DecideHidden(ctx, hc.call, hc.pin)
		if !ok {
			continue
		}
		fast++
		if d.Outcome != decision.Deny || d.Step != decision.StepHidden {
			t.Fatalf("%s: decided in Go as %s at %s", what, d.Outcome, d.Step)
		}
		for j, led := range leds {
			want, _ := c.check(t, fmt.Sprintf("%s, ledger %d again", what, j), hc.call, led)
			g, _ := json.Marshal(d)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Errorf("%s, ledger %d: decided in Go without the ledger\n%s\nwith it\n%s", what, j, g, w)
			}
		}
		if t.Failed() {
			return
		}
	}
	t.Log(sweep.Describe(n))
	c.report(t)
	if hidden := c.all["deny:hidden"]; fast*4 < sweep.Count(n)/10 || c.classes["deny:hidden"]*2 < hidden {
		t.Errorf("%d calls decided in Go without the ledger; %d of %d hidden-tool denies decided in Go", fast, c.classes["deny:hidden"], hidden)
	}
}

// TestHiddenToolNotEvaluatedAgain: once a call to a hidden tool was
// evaluated, a call to it with other arguments is decided without an
// evaluation (a few allocations; an evaluation takes over a hundred), and
// a call whose context is done is still the policy error it was.
func TestHiddenToolNotEvaluatedAgain(t *testing.T) {
	c := newDecider(t, policyOfYAML(t, hiddenConfig))
	call := decision.Call{Server: "s", Tool: decision.Tool{Name: "admin_x"}, Args: map[string]any{"path": "/workspace/a", "n": 1}}
	first, _ := c.check(t, "first call", call, &engine.Ledger{})
	if first.Outcome != decision.Deny || first.Step != decision.StepHidden {
		t.Fatalf("first call: %s at %s; want a hidden-tool deny", first.Outcome, first.Step)
	}
	i := 0
	allocs := testing.AllocsPerRun(50, func() {
		i++
		call.Args = map[string]any{"path": fmt.Sprintf("/workspace/%d", i)}
		if d, err := c.eng.Decide(context.Background(), call, &engine.Ledger{}); err != nil || d.Step != decision.StepHidden {
			t.Fatalf("call %d: %s at %s, %v", i, d.Outcome, d.Step, err)
		}
	})
	if allocs > 40 {
		t.Errorf("a call to a hidden tool met before takes %.0f allocations; want at most 40 (no evaluation)", allocs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := c.eng.Decide(ctx, call, &engine.Ledger{})
	if err == nil || d.Outcome != decision.Deny || d.First().Code != decision.PolicyError {
		t.Errorf("a call whose context is done: %s %s, %v; want a PolicyError deny and an error", d.Outcome, d.First().Code, err)
	}
}
