package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// A planned call's refusal is decided without an evaluation once the
// engine has met the call's planned answer (internal/engine/planned.go).
// The tests below decide generated calls — every server kind (plain,
// shadow mode, pinning on ask and deny), tools with every kind of
// inputSchema, annotations, callers' modes (one the policy does not
// know), pins of every status, every ledger the engine builds, arguments
// plain, secret-shaped, nested or not plain — on the engine and on the
// policy as a stock OPA evaluates it, and compare the decisions' JSON
// byte for byte; a call decided without an evaluation is decided again
// under every other ledger, where it must be evaluated.

// plannedConfig is refusalConfig with servers that pin tool definitions.
const plannedConfig = refusalConfig + `  pa:
    pinTools: ask
  pd:
    pinTools: deny
`

// plannedCall is a generated call and its ledger.
type plannedCall struct {
	call decision.Call
	led  *engine.Ledger
}

// plannedCalls are n generated calls; each choice from its own bits of a
// mix of i, so that every combination turns up in a sample. Most ledgers
// are empty (the calls the fast path may decide).
var (
	hintTrue, hintFalse = true, false
	plannedModes        = []string{"", "", "", "ask", "allow", "deny", "bogus"}
	plannedAnns         = []*decision.Annotations{nil, {ReadOnlyHint: &hintTrue}, {ReadOnlyHint: &hintFalse, DestructiveHint: &hintFalse}, {ReadOnlyHint: &hintFalse, DestructiveHint: &hintTrue, Title: "t"}}
	plannedPins         = []*engine.Pin{
		nil,
		{Status: "ok", SHA256: strings.Repeat("b", 64), PinnedSHA256: strings.Repeat("b", 64)},
		{Status: "new", SHA256: strings.Repeat("c", 64)},
		{Status: "changed", SHA256: strings.Repeat("d", 64), PinnedSHA256: strings.Repeat("e", 64), Changed: []string{"description"}},
		{Status: "error", Error: "the pin store cannot be read"},
	}
)

func plannedCalls(n int) []plannedCall {
	servers := []string{"s", "s", "s", "shadowed", "pa", "pd", ""}
	modes, anns, pins := plannedModes, plannedAnns, plannedPins
	values := []any{
		"/workspace/a", "/etc/x", "", "x", 1, 2.5, 0.005, -1000, true, nil, []any{"a", "a"}, []any{"ok", 1},
		map[string]any{"x": 1}, map[string]any{"X": 1, "y": 1.5}, "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		strings.Repeat("long ", 40), "/workspace/../etc", "https://example.com/a", "https://evil.com/",
		// (not a string that is not UTF-8: the engine echoes its bytes, which
		// encoding/json writes as \ufffd, where a stock OPA, given the input
		// as JSON, echoes U+FFFD itself: the same text, other bytes)
		json.Number("1e400"), math.Inf(1), json.Number("NaN"), []any{map[string]any{"z": 1, "w": 2}},
	}
	keys := []string{"path", "n", "tags", "o", "k", "file", "url", "a", "b", "c", "d", "e", "pth", "tgas", "cursor", "token", "deep", "m"}
	out := make([]plannedCall, 0, n)
	for i := 0; i < n; i++ {
		r := uint64(i+1) * 0x9e3779b97f4a7c15
		pick := func(k int) int {
			r ^= r >> 29
			r *= 0xbf58476d1ce4e5b9
			return int(r>>33) % k
		}
		tool := fuzzTools[pick(len(fuzzTools))]
		tool.Annotations = anns[pick(len(anns))]
		args := map[string]any{}
		for j := pick(4); j >= 0; j-- {
			args[keys[pick(len(keys))]] = values[pick(len(values))]
		}
		c := decision.Call{Server: servers[pick(len(servers))], Tool: tool, Args: args, Mode: modes[pick(len(modes))]}
		if i%17 == 3 {
			c.Surface = "mcp"
			c.Principal = &decision.Principal{ID: "p", Groups: []string{"g"}}
		}
		pin := pins[pick(len(pins))]
		leds := hiddenLedgers(pin)
		led := leds[0]
		if pick(4) == 0 {
			led = leds[pick(len(leds))]
		}
		out = append(out, plannedCall{c, led})
	}
	return out
}

// TestPlannedRefusalsWithoutEvaluation: every generated call is decided as
// the Rego decides it, and a call decided from a planned answer met
// before, without an evaluation, is the Rego's decision; under a ledger
// that is not empty the same call is evaluated.
func TestPlannedRefusalsWithoutEvaluation(t *testing.T) {
	c := newDecider(t, policyOfYAML(t, plannedConfig))
	ctx := context.Background()
	const n = 2500
	fast := map[string]int{}
	calls := plannedCalls(n + 2)
	for i := range n {
		if !sweep.Take(i) {
			continue
		}
		// the call, then its siblings: the same call with the next calls'
		// arguments, which the first may have taught the engine the
		// planned answer of
		pc := calls[i]
		c.check(t, fmt.Sprintf("call %d (%s.%s)", i, pc.call.Server, pc.call.Tool.Name), pc.call, pc.led)
		for j := 1; j <= 2; j++ {
			pc.call.Args = calls[i+j].call.Args
			what := fmt.Sprintf("call %d's sibling %d (%s.%s)", i, j, pc.call.Server, pc.call.Tool.Name)
			d, built, unevaluated, err := c.eng.DecideCounted(ctx, pc.call, pc.led)
			if err != nil {
				continue // not a decision the policy made (no canonical form)
			}
			c.compare(t, what, built, d, pc.call, pc.led)
			if !unevaluated {
				continue
			}
			fast[string(d.Outcome)+":"+string(d.Step)]++
			if !built {
				t.Errorf("%s: decided without an evaluation but not reported built in Go", what)
			}
			for k, led := range hiddenLedgers(pc.led.Pin)[1:] {
				again, _, unevaluated, err := c.eng.DecideCounted(ctx, pc.call, led)
				if err != nil || unevaluated {
					t.Errorf("%s, ledger %d: decided without an evaluation under a ledger that is not empty (%v)", what, k+1, err)
				}
				c.compare(t, fmt.Sprintf("%s, ledger %d", what, k+1), true, again, pc.call, led)
			}
			// the same arguments under every other key: each answer kept
			// must serve only its own key
			var variants []plannedCall
			for _, pin := range plannedPins {
				variants = append(variants, plannedCall{pc.call, &engine.Ledger{Pin: pin}})
			}
			for _, m := range plannedModes {
				v := pc.call
				v.Mode = m
				variants = append(variants, plannedCall{v, pc.led})
			}
			for _, a := range plannedAnns {
				v := pc.call
				v.Tool.Annotations = a
				variants = append(variants, plannedCall{v, pc.led})
			}
			for k, v := range variants {
				if again, built, _, err := c.eng.DecideCounted(ctx, v.call, v.led); err == nil {
					c.compare(t, fmt.Sprintf("%s, variant %d", what, k), built, again, v.call, v.led)
				}
			}
		}
		if t.Failed() {
			return
		}
	}
	t.Log(sweep.Describe(n))
	t.Logf("decided without an evaluation: %v", fast)
	total := 0
	for _, k := range fast {
		total += k
	}
	if total < sweep.Count(n)/20 || fast["deny:argument_rules"] == 0 || fast["deny:unknown_args"] == 0 ||
		fast["allow:"] == 0 || fast["ask:write_mode"] == 0 || fast["deny:write_mode"] == 0 {
		t.Errorf("decided without an evaluation: %v of %d calls; want argument-rule and unknown-argument refusals among them, and common calls (allowed, asked and denied on the write mode)", fast, sweep.Count(n))
	}
}

// TestCommonCallNotEvaluatedAgain: once an allowed call on a tool was
// evaluated, an allowed call with other arguments is decided from the
// common document kept, without an evaluation (far fewer allocations
// than one), and a call the document does not decide (an argument rule
// refuses it, or the ledger is not empty) is still the Rego's.
func TestCommonCallNotEvaluatedAgain(t *testing.T) {
	c := newDecider(t, policyOfYAML(t, plannedConfig))
	yes := true
	call := decision.Call{Server: "s", Tool: decision.Tool{Name: "plain", Annotations: &decision.Annotations{ReadOnlyHint: &yes}}, Args: map[string]any{"path": "/workspace/first"}}
	first, _ := c.check(t, "first call", call, &engine.Ledger{})
	if first.Outcome != decision.Allow {
		t.Fatalf("first call: %s at %s; want an allow", first.Outcome, first.Step)
	}
	i := 0
	allocs := testing.AllocsPerRun(50, func() {
		i++
		call.Args = map[string]any{"path": fmt.Sprintf("/workspace/%d", i)}
		d, _, unevaluated, err := c.eng.DecideCounted(context.Background(), call, &engine.Ledger{})
		if err != nil || d.Outcome != decision.Allow || !unevaluated {
			t.Fatalf("call %d: %s at %s, evaluated %v, %v", i, d.Outcome, d.Step, !unevaluated, err)
		}
	})
	t.Logf("%.0f allocations per allowed call decided without an evaluation", allocs)
	if allocs > 100 {
		t.Errorf("an allowed call on a tool met before takes %.0f allocations; want at most 100 (no evaluation)", allocs)
	}
	call.Args = map[string]any{"path": "/etc/passwd"}
	if d, _ := c.check(t, "a refused call", call, &engine.Ledger{}); d.Outcome != decision.Deny || d.Step != decision.StepArgumentRules {
		t.Errorf("a refused call after allowed ones: %s at %s; want an argument-rule deny", d.Outcome, d.Step)
	}
	call.Args = map[string]any{"path": "/workspace/again"}
	led := &engine.Ledger{Entries: []decision.LedgerEntry{{ID: "w-1", Server: "s", Tool: "plain", ArgsSHA256: strings.Repeat("a", 64), Time: "2026-12-01T10:00:00Z", Surface: "sdk"}}, Total: 1}
	d, _, unevaluated, err := c.eng.DecideCounted(context.Background(), call, led)
	if err != nil || unevaluated {
		t.Errorf("an allowed call's arguments under a ledger with an entry: decided without an evaluation (%v)", err)
	}
	c.compare(t, "under a ledger with an entry", true, d, call, led)
}

// TestPlannedRefusalNotEvaluatedAgain: once a refusal on a tool was
// evaluated, a refusal of other arguments on it is decided without an
// evaluation (far fewer allocations than one: an evaluation alone takes
// a few hundred), and a call whose context is done is still the policy
// error it was.
func TestPlannedRefusalNotEvaluatedAgain(t *testing.T) {
	c := newDecider(t, policyOfYAML(t, plannedConfig))
	yes := true
	call := decision.Call{Server: "s", Tool: decision.Tool{Name: "plain", Annotations: &decision.Annotations{ReadOnlyHint: &yes}}, Args: map[string]any{"path": "/etc/first"}}
	first, _ := c.check(t, "first call", call, &engine.Ledger{})
	if first.Outcome != decision.Deny || first.Step != decision.StepArgumentRules {
		t.Fatalf("first call: %s at %s; want an argument-rule deny", first.Outcome, first.Step)
	}
	i := 0
	allocs := testing.AllocsPerRun(50, func() {
		i++
		call.Args = map[string]any{"path": fmt.Sprintf("/etc/%d", i)}
		d, _, unevaluated, err := c.eng.DecideCounted(context.Background(), call, &engine.Ledger{})
		if err != nil || d.Step != decision.StepArgumentRules || !unevaluated {
			t.Fatalf("call %d: %s at %s, evaluated %v, %v", i, d.Outcome, d.Step, !unevaluated, err)
		}
	})
	t.Logf("%.0f allocations per refusal decided without an evaluation", allocs)
	if allocs > 150 {
		t.Errorf("an argument-rule refusal on a tool met before takes %.0f allocations; want at most 150 (no evaluation)", allocs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := c.eng.Decide(ctx, call, &engine.Ledger{})
	if err == nil || d.Outcome != decision.Deny || d.First().Code != decision.PolicyError {
		t.Errorf("a call whose context is done: %s %s, %v; want a PolicyError deny and an error", d.Outcome, d.First().Code, err)
	}
}

// TestPlannedRefusalsConcurrently decides refusals and allowed calls on
// one tool from several goroutines at once, the planned answer learned
// and read concurrently, and requires every decision to equal a fresh
// engine's serial one. Run it with -race.
func TestPlannedRefusalsConcurrently(t *testing.T) {
	p := policyOfYAML(t, plannedConfig)
	serial, err := engine.Prepare(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	shared, err := engine.Prepare(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	calls := make([]decision.Call, 60)
	for i := range calls {
		path := fmt.Sprintf("/workspace/%d", i)
		switch i % 3 {
		case 1:
			path = fmt.Sprintf("/etc/%d", i)
		case 2:
			path = fmt.Sprintf("/tmp/%d", i)
		}
		calls[i] = decision.Call{Server: "s", Tool: fuzzTools[1+i%2], Args: map[string]any{"path": path, "pth": i % 5}}
	}
	want := make([]string, len(calls))
	for i, c := range calls {
		d, err := serial.Decide(context.Background(), c, &engine.Ledger{})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = fmt.Sprintf("%+v", d)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range calls {
				i := (j + g*17) % len(calls)
				d, err := shared.Decide(context.Background(), calls[i], &engine.Ledger{})
				if err != nil {
					t.Error(err)
					return
				}
				if got := fmt.Sprintf("%+v", d); got != want[i] {
					t.Errorf("call %d decided differently under concurrency:\n%s\nwant\n%s", i, got, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}
