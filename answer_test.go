package mcpxpolicy_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/mcpgate"
)

// TestAnswerRedactsOnce: Engine.Answer redacts a call's decision once on
// every surface — the answer, its rendering and an ask's approval request
// take that one value — and twice for a call decided with an approval:
// the ask it is bound to, and the decision it gives. Not parallel: it
// reads the process's count of redactions.
func TestAnswerRedactsOnce(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(exampleConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	const secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	docs := map[string]string{
		"allow":  `{"server": "fs", "tool": {"name": "write_file"}, "args": {"path": "/workspace/a"}}`,
		"deny":   `{"server": "fs", "tool": {"name": "write_file"}, "args": {"path": "/etc/` + secret + `"}}`,
		"hidden": `{"server": "fs", "tool": {"name": "move_file"}, "args": {}}`,
		"ask":    `{"server": "notes", "tool": {"name": "write_file"}, "args": {"token": "` + secret + `"}}`,
		"bad":    `{"server": "fs"`,
	}
	var held *decision.ApprovalRequest
	for _, surface := range []string{mcpxpolicy.SurfaceDaemon, mcpxpolicy.SurfaceMCP, mcpxpolicy.SurfaceCLI} {
		for name, doc := range docs {
			before := redact.Count()
			ans := eng.Answer(ctx, []byte(doc), mcpxpolicy.AnswerOptions{Surface: surface, Hold: true})
			b, err := json.Marshal(ans)
			if n := redact.Count() - before; n != 1 || err != nil {
				t.Errorf("%s on %s: %d redactions (%v); want 1", name, surface, n, err)
			}
			if strings.Contains(string(b), secret) {
				t.Errorf("%s on %s: the answer shows a secret of the arguments: %s", name, surface, b)
			}
			if name == "ask" && ans.Held == nil {
				t.Errorf("the ask on %s was not put on hold: %v", surface, ans.HoldErr)
			} else if name == "ask" {
				held = ans.Held
			}
		}
	}
	if _, err := eng.Approvals().Approve(held.ID, held.SHA256); err != nil {
		t.Fatal(err)
	}
	before := redact.Count()
	ans := eng.Answer(ctx, []byte(docs["ask"]), mcpxpolicy.AnswerOptions{Approval: held.ID})
	if n := redact.Count() - before; n != 2 || ans.Decision.Decision().Outcome != decision.Allow {
		t.Errorf("the approved ask: %s, %d redactions; want an allow and 2", ans.Decision.Decision().Outcome, n)
	}
}

// TestAnswerRefusesAPromptTooLarge: an ask whose prompt would be too large
// to show in full is refused, never asked, wherever it is answered — the
// door's answer on every surface is a ConfirmationUnavailable deny that
// says so, with no approval request; RequestApproval fails with
// mcpgate.ErrPromptTooLarge and nothing is put on hold; Render of such an
// ask renders that refusal.
func TestAnswerRefusesAPromptTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(exampleConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	big := strings.Repeat("0123456789abcdef", 1200)
	doc := `{"server": "notes", "tool": {"name": "write_file"}, "args": {"content": "` + big + `"}}`
	for _, surface := range []string{mcpxpolicy.SurfaceDaemon, mcpxpolicy.SurfaceMCP, mcpxpolicy.SurfaceCLI} {
		ans := eng.Answer(ctx, []byte(doc), mcpxpolicy.AnswerOptions{Surface: surface, Hold: true})
		d := ans.Decision.Decision()
		b, _ := json.Marshal(ans)
		if d.Outcome != decision.Deny || d.First().Code != decision.ConfirmationUnavailable || ans.Held != nil || ans.Err != nil ||
			!strings.Contains(d.First().Message, "too large to show in full") || strings.Contains(string(b), "Confirm this call") {
			t.Errorf("on %s: %s %s held=%v err=%v; want a ConfirmationUnavailable deny that says it is too large, nothing held\n%.600s",
				surface, d.Outcome, d.First().Code, ans.Held, ans.Err, b)
		}
	}
	call := decision.Call{Server: "notes", Tool: decision.Tool{Name: "write_file"}, Args: map[string]any{"content": big}}
	d, err := eng.Decide(ctx, call)
	if err != nil || d.Outcome != decision.Ask {
		t.Fatalf("Decide = %s, %v; want the ask", d.Outcome, err)
	}
	if _, err := eng.RequestApproval(call, d); !errors.Is(err, mcpgate.ErrPromptTooLarge) {
		t.Errorf("RequestApproval of a call too large to show: %v", err)
	}
	if refused := mcpgate.UnavailableFor(d, err); refused.First().Code != decision.ConfirmationUnavailable {
		t.Errorf("UnavailableFor = %+v", refused.First())
	}
	if list, err := eng.Approvals().List(); err != nil || len(list) != 0 {
		t.Errorf("a call too large to show was put on hold: %v %v", list, err)
	}
	for _, surface := range []string{mcpxpolicy.SurfaceDaemon, mcpxpolicy.SurfaceMCP, mcpxpolicy.SurfaceCLI} {
		out, err := mcpxpolicy.Render(surface, call, mcpxpolicy.Redact(call, d))
		b, _ := json.Marshal(out)
		if err != nil || !strings.Contains(string(b), "too large to show in full") || strings.Contains(string(b), "Confirm this call") {
			t.Errorf("Render on %s of an ask too large to show: %v %.400s", surface, err, b)
		}
	}
}
