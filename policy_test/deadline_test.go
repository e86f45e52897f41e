package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// Runaway evaluations: every decision has a deadline on every surface, and
// operator overrides may not call a builtin whose cost a number sets
// (docs/overrides.md). The binary runs under a memory cap and a wall-clock
// timeout, so a regression fails the test instead of the machine.

// memCapKB caps the binary's address space (ulimit -v) in these tests. A
// Go binary needs far more address space than memory: 3 GiB lets it run
// and still stops a runaway long before the machine suffers.
const memCapKB = 3 << 20

// underLimits rewrites cmd to run under the memory cap (memoryCapped).
func underLimits(t testing.TB, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	return memoryCapped(t, cmd, memCapKB)
}

// growOverride builds a list of 10^8 pairs when the call's text is "spin":
// memory grows until the deadline stops it.
const growOverride = `package mcpx.overrides

deny contains {"code": "NeverReached", "message": "never reached"} if {
	input.args.text == "spin"
	pairs := [[i, j] | some i in numbers.range(1, 10000); some j in numbers.range(1, 10000)]
	count(pairs) < 0
}
`

// spinOverride loops 10^12 times when the call's text is "spin", keeping
// nothing: only a deadline ends it.
const spinOverride = `package mcpx.overrides

deny contains {"code": "NeverReached", "message": "never reached"} if {
	input.args.text == "spin"
	some i in numbers.range(1, 10000)
	some j in numbers.range(1, 10000)
	some k in numbers.range(1, 10000)
	i + j + k < 0
}
`

// runawayOverride is the literal case: one builtin call that allocates 10^8
// numbers at once.
const runawayOverride = `package mcpx.overrides

deny contains {"code": "Big", "message": "big"} if {
	count(numbers.range(1, 1e8)) > 0
}
`

const noteCall = `{"server": "notes", "tool": {"name": "read_note", "annotations": {"readOnlyHint": true},
  "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}, "args": {"text": "spin"}}`

// limitsSetup writes a config whose overrides folder holds override.
func limitsSetup(t *testing.T, override string) (config, call, state string) {
	t.Helper()
	dir := writeFiles(t, map[string]string{
		"mcpx-policy.yaml": "version: 1\npolicy:\n  write: allow\n  overrides: [overrides/]\n",
		"overrides/o.rego": override,
		"calls/spin.json":  noteCall,
	})
	return filepath.Join(dir, "mcpx-policy.yaml"), filepath.Join(dir, "calls", "spin.json"), filepath.Join(dir, "state")
}

// runCapped runs the binary with args under the memory cap, killed after
// wall; it returns the exit code, stdout and stderr.
func runCapped(t *testing.T, wall time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wall)
	defer cancel()
	cmd := underLimits(t, exec.CommandContext(ctx, filepath.Join(binDir, "mcpx-policy"), args...))
	cmd.Env = cleanEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mcpx-policy %s still ran after %s (killed)\nstderr: %.2000s", strings.Join(args, " "), wall, errb.String())
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

// policyErrorDecision reads eval's one JSON decision and requires a
// PolicyError deny whose message names the time limit.
func policyErrorDecision(t *testing.T, stdout, limit string) {
	t.Helper()
	var d decision.Decision
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("eval printed no decision: %v\n%.2000s", err, stdout)
	}
	want := "policy error: the decision did not finish within its time limit (" + limit + ") and was stopped; denied (fail closed)"
	if d.Outcome != decision.Deny || d.First().Code != decision.PolicyError || d.First().Message != want {
		t.Fatalf("decision %s %s %q; want a PolicyError deny %q", d.Outcome, d.First().Code, d.First().Message, want)
	}
}

// TestEvalStopsAGrowingEvaluation: an override whose evaluation grows
// without end is stopped at --decide-timeout; eval exits with the deny
// status and prints the PolicyError decision.
func TestEvalStopsAGrowingEvaluation(t *testing.T) {
	t.Parallel()
	config, call, state := limitsSetup(t, growOverride)
	code, out, errOut := runCapped(t, 60*time.Second, "eval", "--config", config, "--state-dir", state, "--format", "json", "--decide-timeout", "1s", call)
	if code != 2 {
		t.Fatalf("exit %d; want 2 (deny)\nstderr: %.2000s", code, errOut)
	}
	policyErrorDecision(t, out, "1s")
}

// TestEvalDefaultDeadline: without the flag, eval's decisions have the
// SDK's default deadline (5 s).
func TestEvalDefaultDeadline(t *testing.T) {
	t.Parallel()
	config, call, state := limitsSetup(t, spinOverride)
	code, out, errOut := runCapped(t, 60*time.Second, "eval", "--config", config, "--state-dir", state, "--format", "json", call)
	if code != 2 {
		t.Fatalf("exit %d; want 2 (deny)\nstderr: %.2000s", code, errOut)
	}
	policyErrorDecision(t, out, mcpxpolicy.DefaultDecideTimeout.String())
}

// TestUnboundedOverrideIsAConfigError: numbers.range(1, 1e8) in an override
// is refused at load by check, eval and bundle, naming the file and line;
// nothing is evaluated.
func TestUnboundedOverrideIsAConfigError(t *testing.T) {
	t.Parallel()
	config, call, state := limitsSetup(t, runawayOverride)
	want := "overrides/o.rego:4: rego_compile_error: numbers.range(1, 1e8) in an operator override: it produces 100000000 numbers, more than the 10000 an override may generate"
	for _, args := range [][]string{
		{"eval", "--config", config, "--state-dir", state, call},
		{"check", "--config", config},
		{"bundle", "--config", config, "--dir", filepath.Join(t.TempDir(), "bundle")},
	} {
		code, _, errOut := runCapped(t, 60*time.Second, args...)
		if code != 1 || !strings.Contains(errOut, "mcpx-policy: error: ") || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %.2000s; want 1 and %q", args[0], code, errOut, want)
		}
	}
}

// TestProxyStopsARunawayDecision: behind the proxy (a real Go MCP server),
// a call whose decision runs away is refused with PolicyError at
// --decide-timeout, and the proxy stays up: the next call goes through.
func TestProxyStopsARunawayDecision(t *testing.T) {
	t.Parallel()
	server := goServer(t, "../e2e/exitserver")
	config, _, _ := limitsSetup(t, growOverride)
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(t, "notes", string(b), "--decide-timeout", "1s", "--pool-only") // a pool-only policy
	// the config's overrides/ is relative to its folder: put it beside
	if err := os.CopyFS(filepath.Join(filepath.Dir(g.config), "overrides"), os.DirFS(filepath.Join(filepath.Dir(config), "overrides"))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs := connect(t, ctx, underLimits(t, g.command(t, server)), nil)

	res := call(t, ctx, cs, "read_note", map[string]any{"text": "spin"})
	if code := refusal(res); code != string(decision.PolicyError) || !strings.Contains(text(res), "did not finish within its time limit (1s)") {
		t.Fatalf("the runaway call = %s %q; want a PolicyError refusal naming the 1s limit", code, text(res))
	}
	if res := call(t, ctx, cs, "read_note", map[string]any{"text": "hello"}); res.IsError || text(res) != "note" {
		t.Fatalf("the next call = %q; want the server's answer", text(res))
	}
}

// TestServeDecideTimeout: serve takes the same --decide-timeout; a
// runaway decision is a PolicyError answer and the service stays up.
func TestServeDecideTimeout(t *testing.T) {
	t.Parallel()
	config, call, state := limitsSetup(t, growOverride)
	addr := freeLoopbackAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := underLimits(t, exec.CommandContext(ctx, filepath.Join(binDir, "mcpx-policy"), "serve", "--config", config, "--state-dir", state, "--addr", addr, "--decision-log", "off", "--decide-timeout", "1s"))
	cmd.Env = cleanEnv()
	base := startServe(t, cmd, addr).base
	body, err := os.ReadFile(call)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/v1/decide", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST /v1/decide: %v", err)
	}
	var d decision.Decision
	err = json.NewDecoder(resp.Body).Decode(&d)
	resp.Body.Close()
	if err != nil || d.First().Code != decision.PolicyError || !strings.Contains(d.First().Message, "time limit (1s)") {
		t.Fatalf("decide = %s %q (%v); want a PolicyError naming the 1s limit", d.First().Code, d.First().Message, err)
	}
	resp, err = http.Get(base + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("after the runaway decision /healthz = %v, %v", resp, err)
	}
	resp.Body.Close()
}

// TestSDKDeadlines: Decide applies Options.DecideTimeout when the context
// has no deadline, and the context's own deadline when it has one; out of
// time it returns a PolicyError deny and an error that errors.Is finds
// context.DeadlineExceeded in.
func TestSDKDeadlines(t *testing.T) {
	t.Parallel()
	config, _, state := limitsSetup(t, spinOverride)
	tool := decision.Tool{Name: "read_note", Annotations: readOnly, InputSchema: object("text")}
	call := decision.Call{Server: "notes", Tool: tool, Args: map[string]any{"text": "spin"}}
	decideWithin := func(eng *mcpxpolicy.Engine, ctx context.Context) (decision.Decision, error) {
		type result struct {
			d   decision.Decision
			err error
		}
		done := make(chan result, 1)
		go func() {
			d, err := eng.Decide(ctx, call)
			done <- result{d, err}
		}()
		select {
		case r := <-done:
			return r.d, r.err
		case <-time.After(60 * time.Second):
			t.Fatal("Decide ran for 60 s: no deadline applied")
			return decision.Decision{}, nil
		}
	}
	check := func(name string, d decision.Decision, err error, limit string) {
		t.Helper()
		if !errors.Is(err, context.DeadlineExceeded) || d.Outcome != decision.Deny || d.First().Code != decision.PolicyError ||
			!strings.Contains(d.First().Message, "time limit ("+limit+")") {
			t.Errorf("%s: %s %s %q, %v; want a PolicyError deny naming %s and DeadlineExceeded", name, d.Outcome, d.First().Code, d.First().Message, err, limit)
		}
	}

	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{config}, Env: []string{}, StateDir: state, DecideTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d, err := decideWithin(eng, context.Background())
	check("Options.DecideTimeout", d, err, "300ms")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	d, err = decideWithin(eng, ctx)
	if !errors.Is(err, context.DeadlineExceeded) || d.First().Code != decision.PolicyError || strings.Contains(d.First().Message, "(300ms)") {
		t.Errorf("the context's own deadline: %s %q, %v; want its limit, not the option's", d.First().Code, d.First().Message, err)
	}

	// no option: DefaultDecideTimeout
	eng, err = mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{config}, Env: []string{}, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	d, err = decideWithin(eng, context.Background())
	check("the default", d, err, mcpxpolicy.DefaultDecideTimeout.String())

	// a normal call is not affected
	call.Args = map[string]any{"text": "hello"}
	if d, err := decideWithin(eng, context.Background()); err != nil || d.Outcome != decision.Allow {
		t.Errorf("a normal call: %s %v", d.Outcome, err)
	}
}
