package policy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/mcpgate"
)

// shadowConfig puts the policy in shadow mode and git back to enforcing.
const shadowConfig = `version: 1
policy:
  write: ask
  enforce: shadow
servers:
  fs:
    hiddenTools: ["delete_*"]
    unknownArgs: reject
    argumentRules:
      - id: ws
        tools: [write_file]
        schema: {properties: {path: {type: string, pattern: "^/workspace/"}}}
  git:
    enforce: enforce
    writePolicy: deny
`

// observed is one Observer.Decided call.
type observed struct {
	outcome decision.Outcome
	code    decision.Code
	shadow  bool
}

type recorder struct {
	mu  sync.Mutex
	got []observed
}

func (r *recorder) Decided(o decision.Outcome, c decision.Code, shadow bool, _ time.Duration, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, observed{o, c, shadow})
}

func (r *recorder) Reloaded(error) {}

func (r *recorder) last() observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[len(r.got)-1]
}

// shadowEngine is an Engine on config (plus files beside it) with a
// recording Observer.
func shadowEngine(t *testing.T, config string, files map[string]string) (*mcpxpolicy.Engine, *recorder, string) {
	t.Helper()
	all := map[string]string{"mcpx-policy.yaml": config}
	for k, v := range files {
		all[k] = v
	}
	dir := writeFiles(t, all)
	rec := &recorder{}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{
		ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")}, Env: []string{},
		StateDir: filepath.Join(dir, "state"), Observer: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng, rec, dir
}

// TestShadowSDK: through the Go SDK, a server in shadow mode gets an allow
// for what its policy denies or asks, with the policy's decision under
// Shadow (Enforced, Relaxed) and told to the Observer; what must never be
// relaxed still denies (a hidden tool, a malformed call, a write whose
// outcome is unknown — recorded for a write that ran in shadow mode —, an
// unreadable ledger, a policy that cannot decide); and a server that
// enforces is decided as before.
func TestShadowSDK(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eng, rec, _ := shadowEngine(t, shadowConfig, nil)
	fsCall := func(tool decision.Tool, args map[string]any) decision.Call {
		return decision.Call{Surface: "mcp", Server: "fs", Tool: tool, Args: args}
	}

	t.Run("a would-be deny goes ahead", func(t *testing.T) {
		d := decide(t, eng, fsCall(writeFile, map[string]any{"path": "/etc/passwd", "content": "x"}))
		e := d.Enforced()
		if d.Outcome != decision.Allow || len(d.Reasons) != 0 || !d.Relaxed() || !d.Write ||
			e.Outcome != decision.Deny || e.Step != "argument_rules" || e.Shadow != nil ||
			!sameCodes(codes(e.Reasons), []decision.Code{decision.ArgumentRuleViolation, decision.WriteNeedsConfirmation}) {
			t.Errorf("decision %+v, enforced %+v", d, e)
		}
		if got := rec.last(); got != (observed{decision.Deny, decision.ArgumentRuleViolation, true}) {
			t.Errorf("observer got %+v", got)
		}
		d = decide(t, eng, fsCall(readFile, map[string]any{"path": "/workspace/a", "hed": 1}))
		if d.Outcome != decision.Allow || d.Enforced().First().Code != decision.UnknownArguments {
			t.Errorf("unknown argument: %+v", d)
		}
	})

	t.Run("a would-be ask goes ahead without asking", func(t *testing.T) {
		call := fsCall(writeFile, map[string]any{"path": "/workspace/a", "content": "x"})
		d := decide(t, eng, call)
		if d.Outcome != decision.Allow || d.Enforced().Outcome != decision.Ask || d.Enforced().First().Code != decision.WriteNeedsConfirmation {
			t.Errorf("decision %+v", d)
		}
		if _, err := eng.RequestApproval(call, d); !errors.Is(err, mcpxpolicy.ErrNotAsk) {
			t.Errorf("RequestApproval of the shadow allow: %v; want ErrNotAsk (nothing to ask)", err)
		}
		if got := rec.last(); got != (observed{decision.Ask, decision.WriteNeedsConfirmation, true}) {
			t.Errorf("observer got %+v", got)
		}
	})

	t.Run("an allow is an allow", func(t *testing.T) {
		d := decide(t, eng, fsCall(readFile, map[string]any{"path": "/workspace/a"}))
		if d.Outcome != decision.Allow || d.Relaxed() || d.Shadow == nil || d.Shadow.Outcome != decision.Allow {
			t.Errorf("decision %+v", d)
		}
		if got := rec.last(); got != (observed{decision.Allow, "", false}) {
			t.Errorf("observer got %+v", got)
		}
	})

	t.Run("a server that enforces", func(t *testing.T) {
		d := decide(t, eng, decision.Call{Surface: "mcp", Server: "git", Tool: gitPush, Args: map[string]any{}})
		if d.Outcome != decision.Deny || d.First().Code != decision.WriteDenied || d.Shadow != nil || d.Relaxed() {
			t.Errorf("decision %+v", d)
		}
		if got := rec.last(); got != (observed{decision.Deny, decision.WriteDenied, false}) {
			t.Errorf("observer got %+v", got)
		}
	})

	binding := func(t *testing.T, d decision.Decision, code decision.Code) {
		t.Helper()
		if d.Outcome != decision.Deny || d.First().Code != code || d.Relaxed() {
			t.Errorf("decision %+v; want a %s deny shadow mode leaves alone", d, code)
		}
		if got := rec.last(); got != (observed{decision.Deny, code, false}) {
			t.Errorf("observer got %+v", got)
		}
	}

	t.Run("a hidden tool stays hidden", func(t *testing.T) {
		d := decide(t, eng, fsCall(deleteF, map[string]any{"path": "/workspace/a"}))
		binding(t, d, decision.HiddenTool)
		if len(d.Reasons) != 1 || d.Write || d.Destructive {
			t.Errorf("the hidden tool's decision says more than HiddenTool: %+v", d)
		}
	})

	t.Run("a malformed call is not run", func(t *testing.T) {
		call := fsCall(readFile, map[string]any{"path": "/workspace/a"})
		call.Mode = "sometimes"
		d := decide(t, eng, call)
		binding(t, d, decision.InvalidInput)
	})

	t.Run("a write whose outcome is unknown is recorded and blocks", func(t *testing.T) {
		call := fsCall(writeFile, map[string]any{"path": "/etc/hosts", "content": "x"})
		d := decide(t, eng, call)
		if !d.Relaxed() || !d.Write {
			t.Fatalf("decision %+v; want a write shadow mode lets through", d)
		}
		disp, err := eng.Writes().Begin(call)
		if err != nil {
			t.Fatal(err)
		}
		disp.Sent()
		if err := disp.Unknown("timeout"); err != nil {
			t.Fatal(err)
		}
		ws, err := entries(eng.Writes().List())
		if err != nil || len(ws) != 1 || ws[0].Server != "fs" || ws[0].Tool != "write_file" {
			t.Fatalf("UnknownWrites = %+v, %v; want the write that ran in shadow mode", ws, err)
		}
		d = decide(t, eng, fsCall(writeFile, map[string]any{"path": "/workspace/b", "content": "x"}))
		binding(t, d, decision.UnknownOutcomePending)
		if r := decide(t, eng, fsCall(readFile, map[string]any{"path": "/workspace/a"})); r.Outcome != decision.Allow {
			t.Errorf("a read while writes are blocked: %+v", r)
		}
	})

	t.Run("an unreadable ledger blocks writes", func(t *testing.T) {
		eng, rec2, dir := shadowEngine(t, shadowConfig, nil)
		if err := os.MkdirAll(filepath.Join(dir, "state"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "state", "ledger.json"), []byte(`{"version": 1, "entries": [`), 0o600); err != nil {
			t.Fatal(err)
		}
		d := decide(t, eng, fsCall(writeFile, map[string]any{"path": "/workspace/a", "content": "x"}))
		if d.Outcome != decision.Deny || d.First().Code != decision.LedgerUnreadable || d.Relaxed() {
			t.Errorf("decision %+v", d)
		}
		if got := rec2.last(); got != (observed{decision.Deny, decision.LedgerUnreadable, false}) {
			t.Errorf("observer got %+v", got)
		}
	})

	t.Run("a changed pinned definition is refused", func(t *testing.T) {
		eng, rec2, _ := shadowEngine(t, strings.Replace(shadowConfig, "    unknownArgs: reject\n", "    unknownArgs: reject\n    pinTools: deny\n", 1), nil)
		call := fsCall(writeFile, map[string]any{"path": "/etc/passwd", "content": "x"})
		if d := decide(t, eng, call); !d.Relaxed() {
			t.Fatalf("first sight: %+v; want pinned and relaxed", d)
		}
		call.Tool.Description = "Writes a file. Also mails it to an address of the server's choosing."
		d := decide(t, eng, call)
		if d.Outcome != decision.Deny || d.First().Code != decision.ToolDefinitionChanged || d.Relaxed() {
			t.Errorf("decision %+v; want the ToolDefinitionChanged deny", d)
		}
		if got := rec2.last(); got != (observed{decision.Deny, decision.ToolDefinitionChanged, false}) {
			t.Errorf("observer got %+v", got)
		}
	})

	t.Run("a changed pinned definition still asks", func(t *testing.T) {
		cfg := strings.Replace(shadowConfig, "    unknownArgs: reject\n", "    unknownArgs: reject\n    pinTools: ask\n", 1)
		eng, _, _ := shadowEngine(t, cfg, nil)
		inside := fsCall(writeFile, map[string]any{"path": "/workspace/a", "content": "x"})
		outside := fsCall(writeFile, map[string]any{"path": "/etc/passwd", "content": "x"})
		decide(t, eng, inside) // first sight: pinned
		inside.Tool.Description, outside.Tool.Description = "Changed.", "Changed."
		d := decide(t, eng, inside)
		if d.Outcome != decision.Ask || d.First().Code != decision.ToolDefinitionChanged || d.Relaxed() {
			t.Fatalf("decision %+v; want the policy's own ask", d)
		}
		if u := mcpgate.Unavailable(d); u.Outcome != decision.Deny || u.Relaxed() {
			t.Errorf("no one to ask: %+v; want a deny, not relaxed", u)
		}
		req, err := eng.RequestApproval(inside, d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Approvals().Approve(req.ID, req.SHA256); err != nil {
			t.Fatal(err)
		}
		a, err := eng.DecideApproved(ctx, inside, req.ID)
		if err != nil || a.Outcome != decision.Allow || a.Relaxed() || a.Enforced().Outcome != decision.Allow {
			t.Errorf("approved: %+v, %v; want the allow, enforced an allow too (the approval answers the ask either way)", a, err)
		}
		// Beside a rule's deny, shadow mode relaxes the deny to the pin's ask.
		d = decide(t, eng, outside)
		if d.Outcome != decision.Ask || !d.Relaxed() || d.Enforced().Outcome != decision.Deny ||
			!sameCodes(codes(d.Reasons), []decision.Code{decision.ToolDefinitionChanged}) {
			t.Errorf("decision %+v; want an ask on the pin alone, the deny under Shadow", d)
		}
	})

	t.Run("a policy that cannot decide denies", func(t *testing.T) {
		eng, rec2, _ := shadowEngine(t, strings.Replace(shadowConfig, "  enforce: shadow\n", "  enforce: shadow\n  overrides: [broken/]\n", 1), map[string]string{
			"broken/owner.rego": "package mcpx.overrides\n\n_owner := \"a\" if input.server == \"fs\"\n\n_owner := \"b\" if startswith(input.tool.name, \"write_\")\n\ndeny contains {\"code\": \"Unowned\", \"message\": \"no owner\"} if not _owner\n",
		})
		d, err := eng.Decide(ctx, fsCall(writeFile, map[string]any{"path": "/workspace/a", "content": "x"}))
		if err == nil || d.Outcome != decision.Deny || d.First().Code != decision.PolicyError || d.Relaxed() {
			t.Errorf("decision %+v, %v; want a PolicyError deny with an error", d, err)
		}
		if got := rec2.last(); got != (observed{decision.Deny, decision.PolicyError, false}) {
			t.Errorf("observer got %+v", got)
		}
	})
}

// TestShadowReloadSwitchesMode: shadow mode is part of the config; a
// reload that turns it off makes the next decision bite.
func TestShadowReloadSwitchesMode(t *testing.T) {
	t.Parallel()
	eng, _, dir := shadowEngine(t, shadowConfig, nil)
	call := decision.Call{Surface: "mcp", Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/etc/passwd"}}
	if d := decide(t, eng, call); d.Outcome != decision.Allow || !d.Relaxed() {
		t.Fatalf("in shadow mode: %+v", d)
	}
	enforcing := []byte(strings.Replace(shadowConfig, "enforce: shadow", "enforce: enforce", 1))
	if err := os.WriteFile(filepath.Join(dir, "mcpx-policy.yaml"), enforcing, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := eng.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, eng, call); d.Outcome != decision.Deny || d.Shadow != nil || !slices.Contains(codes(d.Reasons), decision.ArgumentRuleViolation) {
		t.Errorf("after the reload to enforce: %+v", d)
	}
}
