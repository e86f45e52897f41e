package engine

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
)

// The engine guards the package the config loader admits overrides in.
func TestGuardedPackageIsTheOverridesPackage(t *testing.T) {
	if want := "data." + config.OverridesPackage; overridesPackage != want {
		t.Fatalf("the guard checks %s; overrides are loaded in %s", overridesPackage, want)
	}
}

// prepareOverride prepares testPolicy with body as the operator override
// overrides/o.rego.
func prepareOverride(body string) error {
	_, err := Prepare(context.Background(), Policy{
		Modules: map[string]string{
			"p.rego":           testPolicy,
			"overrides/o.rego": "package mcpx.overrides\n\n" + body + "\n",
		},
		Data: map[string]any{"config": map[string]any{"servers": map[string]any{}}},
	})
	return err
}

// TestGuardOverrides: an override may call a builtin whose result or
// running time a number sets only in a shape whose cost is known at load;
// the error names the file and line, what is wrong and what to do.
func TestGuardOverrides(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body string
		want string // "" means accepted; else a piece of the error
	}{
		{`x := numbers.range(1, 10)`, ""},
		{`x := numbers.range(-5000, 4999)`, ""},
		{`x := numbers.range(10000, 1)`, ""},
		{`x := numbers.range_step(0, 99990, 10)`, ""},
		{`x := bits.lsh(input.args.n, 1024)`, ""},
		{`x := net.cidr_expand("10.0.0.0/19")`, ""},
		{`x := [i | some i in numbers.range(1, 3)]`, ""},
		{`x if every i in numbers.range(1, 5) { i > 0 }`, ""},
		{`x := numbers.range(1, 1e8)`, "overrides/o.rego:3: rego_compile_error: numbers.range(1, 1e8) in an operator override: it produces 100000000 numbers, more than the 10000 an override may generate"},
		{`x := numbers.range(0, 10000)`, "it produces 10001 numbers"},
		{`x := numbers.range(1, input.args.n)`, "numbers.range(1, input.args.n) in an operator override: its bounds must be integer literals, since a bound known only at evaluation"},
		{`x := [i | some i in numbers.range(0, count(input.args) - 1)]`, "iterate a collection with `some i, x in xs` instead"},
		{`x := numbers.range(0.5, 3)`, "must be integer literals"},
		{`x := numbers.range(9007199254740993, 9007199254740994)`, "must be integer literals"},
		{`x := numbers.range_step(1, 1e9, 2)`, "it produces 500000000 numbers"},
		{`x := numbers.range_step(1, 5, 0)`, "its bounds and step must be integer literals, the step positive"},
		{`x := numbers.range_step(1, 5, input.args.step)`, "must be integer literals"},
		{`x if every i in numbers.range(1, 1e6) { i > 0 }`, "it produces 1000000 numbers"},
		{`x := bits.lsh(1, 1025)`, "its shift must be an integer literal from 0 to 1024"},
		{`x := bits.lsh(1, input.args.n)`, "its shift must be an integer literal"},
		{`x := net.cidr_expand("10.0.0.0/8")`, "it produces 2^24 addresses"},
		{`x := net.cidr_expand(input.args.cidr)`, "must be a CIDR literal"},
		{`x := strings.render_template("{{range 100000}}x{{end}}", {})`, "a template can loop any number of times"},
		{`x := graph.reachable_paths({"a": ["b"]}, {"a"})`, "use graph.reachable instead"},
		{`x if { count(input.args) > 0 with count as numbers.range }`, "numbers.range in an operator override may only be called, not named"},
		{"x if {\n\tnumbers.range(1, 1e8, y)\n\tcount(y) > 0\n}", "overrides/o.rego:4: rego_compile_error: numbers.range(1, 1e8)"},
	}
	for _, c := range cases {
		err := prepareOverride(c.body)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.body, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v; want one with %q", c.body, err, c.want)
		}
	}
}

// The policy's own Rego is not guarded: only package mcpx.overrides is.
func TestGuardLeavesThePolicyAlone(t *testing.T) {
	t.Parallel()
	prepareTest(t, testPolicy+"\nbig := numbers.range(1, 1e6)\n")
}

// spinPolicy decides after a loop of 10^12 steps that allocates nothing
// it keeps: only a deadline ends it.
const spinPolicy = `package mcpx

default decision := {"outcome": "deny", "step": "input", "reasons": [{"code": "PolicyError", "step": "input", "message": "no"}], "warnings": [], "write": true, "destructive": true, "call": {"server": "", "tool": ""}}

decision := {"outcome": "allow", "step": "", "reasons": [], "warnings": [], "write": false, "destructive": false, "call": {"server": input.server, "tool": input.tool.name}} if {
	some i in numbers.range(1, 10000)
	some j in numbers.range(1, 10000)
	some k in numbers.range(1, 10000)
	i + j + k < 0
}
`

// TestDeadlineStopsTheEvaluation: a decision that runs past its context's
// deadline is a PolicyError deny that says so, returned with an error that
// errors.Is finds context.DeadlineExceeded in; a cancelled context says
// cancelled.
func TestDeadlineStopsTheEvaluation(t *testing.T) {
	t.Parallel()
	e := prepareTest(t, spinPolicy)
	type result struct {
		d   decision.Decision
		err error
	}
	run := func(ctx context.Context) result {
		done := make(chan result, 1)
		go func() {
			d, err := e.Decide(ctx, testCall, &Ledger{})
			done <- result{d, err}
		}()
		select {
		case r := <-done:
			return r
		case <-time.After(60 * time.Second):
			t.Fatal("Decide ignored its context for 60 s")
			return result{}
		}
	}

	// The SDK notes the limit it set (WithBudget); what is left of it when
	// the evaluation starts depends on the machine's load.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r := run(WithBudget(ctx, 300*time.Millisecond))
	if r.d.Outcome != decision.Deny || r.d.First().Code != decision.PolicyError || !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("past its deadline: %s %s, %v; want a PolicyError deny and DeadlineExceeded", r.d.Outcome, r.d.First().Code, r.err)
	}
	// without WithBudget the limit named is the time left when the
	// evaluation started: 300ms less what the call took to get there
	m := regexp.MustCompile(`^policy error: the decision did not finish within its time limit \((\d+)ms\) and was stopped; denied \(fail closed\)$`).FindStringSubmatch(r.d.First().Message)
	left := -1
	if m != nil {
		left, _ = strconv.Atoi(m[1])
	}
	if left < 200 || left > 300 {
		t.Errorf("message %q; want the time limit (at most 300ms) named", r.d.First().Message)
	}
	if r.d.Call.Server != "fs" || r.d.Call.SHA256 == "" {
		t.Errorf("the deny names no call: %+v", r.d.Call)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	r = run(ctx)
	if r.d.First().Code != decision.PolicyError || !errors.Is(r.err, context.Canceled) || !strings.Contains(r.d.First().Message, "cancelled") {
		t.Fatalf("cancelled: %s %q, %v", r.d.First().Code, r.d.First().Message, r.err)
	}
}
