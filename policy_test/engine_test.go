package policy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// TestReloadKeepsOldPolicyOnFailure: a config that fails to load leaves the
// engine deciding with the last good one; a good one swaps in.
func TestReloadKeepsOldPolicyOnFailure(t *testing.T) {
	t.Parallel()
	eng, dir := newEngine(t, "version: 1\npolicy:\n  write: allow\n")
	cfg := filepath.Join(dir, "mcpx-policy.yaml")
	write := decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/a"}}
	rev := eng.Revision()

	if err := os.WriteFile(cfg, []byte("version: 1\npolicy:\n  write: sometimes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := eng.Reload(context.Background())
	var ce *mcpxpolicy.ConfigError
	if !errors.As(err, &ce) || ce.Line != 3 {
		t.Fatalf("Reload of a bad config: %v", err)
	}
	if d := decide(t, eng, write); d.Outcome != decision.Allow || eng.Revision() != rev {
		t.Fatalf("after a failed reload: %s, revision changed %v", d.Outcome, eng.Revision() != rev)
	}

	if err := os.WriteFile(cfg, []byte("version: 1\npolicy:\n  write: deny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := eng.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, eng, write); d.Outcome != decision.Deny || eng.Revision() == rev {
		t.Fatalf("after a good reload: %s", d.Outcome)
	}
}

// TestConcurrentDecide runs many decisions at once, across a reload, and
// checks each against the answer it must have.
func TestConcurrentDecide(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, stepsConfig)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				path := fmt.Sprintf("/workspace/%d/%d", g, i)
				want := decision.Allow
				if i%2 == 1 {
					path = fmt.Sprintf("/etc/%d/%d", g, i)
					want = decision.Deny
				}
				d, err := eng.Decide(context.Background(), decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": path}})
				if err != nil || d.Outcome != want {
					errs <- fmt.Errorf("%s: got %s (%v), want %s", path, d.Outcome, err, want)
					return
				}
			}
		}()
	}
	if err := eng.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCancelledContextDenies: an evaluation that cannot finish is a deny
// returned together with the error.
func TestCancelledContextDenies(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, "version: 1\npolicy:\n  write: allow\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := eng.Decide(ctx, decision.Call{Server: "fs", Tool: readFile})
	if err == nil || d.Outcome != decision.Deny || d.Reasons[0].Code != decision.PolicyError {
		t.Fatalf("cancelled Decide = %s %v, %v", d.Outcome, codes(d.Reasons), err)
	}
}

// TestOverrides: operator Rego in package mcpx.overrides adds deny and ask
// findings, sees the input (principal included) and can only tighten.
func TestOverrides(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"mcpx-policy.yaml": "version: 1\npolicy:\n  write: allow\n  overrides: [overrides]\n",
		"overrides/ops.rego": `package mcpx.overrides

deny contains {"code": "NoGitDir", "message": sprintf("%s: writes under .git are refused", [input.tool.name]), "path": input.args.path} if {
	contains(input.args.path, "/.git/")
}

ask contains {"code": "NotMaintainer", "message": "writes by non-maintainers need a look"} if {
	input.tool.annotations.readOnlyHint == false
	not "maintainers" in object.get(object.get(input, "principal", {}), "groups", [])
}
`,
	})
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{
		ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")}, Env: []string{}, StateDir: filepath.Join(dir, "state"),
	})
	if err != nil {
		t.Fatal(err)
	}
	maintainer := &decision.Principal{ID: "ana", Groups: []string{"maintainers"}}
	d := decide(t, eng, decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/w/.git/config"}, Principal: maintainer})
	if d.Outcome != decision.Deny || d.Step != "overrides" || d.Reasons[0].Code != decision.OverrideDeny {
		t.Fatalf("override deny: %s %s %v", d.Outcome, d.Step, codes(d.Reasons))
	}
	if got := d.Reasons[0].Details; got["override_code"] != "NoGitDir" || got["path"] != "/w/.git/config" {
		t.Fatalf("override details = %v", got)
	}
	d = decide(t, eng, decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/w/a"}, Principal: &decision.Principal{ID: "bo"}})
	if d.Outcome != decision.Ask || d.Reasons[0].Code != decision.OverrideAsk || !strings.Contains(d.Reasons[0].Message, "non-maintainers") {
		t.Fatalf("override ask: %s %v", d.Outcome, d.Reasons)
	}
	if d := decide(t, eng, decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/w/a"}, Principal: maintainer}); d.Outcome != decision.Allow {
		t.Fatalf("maintainer write: %s %v", d.Outcome, d.Reasons)
	}
}

// TestOverrideCannotLoosen: an override file that tries to define the
// decision itself is refused at load.
func TestOverrideCannotLoosen(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"mcpx-policy.yaml": "version: 1\npolicy:\n  overrides: [evil.rego]\n",
		"evil.rego":        "package mcpx\n\nallow_everything := true\n",
	})
	_, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{
		ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")}, Env: []string{}, StateDir: filepath.Join(dir, "state"),
	})
	if err == nil || !strings.Contains(err.Error(), "mcpx.overrides") {
		t.Fatalf("override in package mcpx loaded: %v", err)
	}
}
