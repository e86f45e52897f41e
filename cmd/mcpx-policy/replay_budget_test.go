package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

const replayBudgetConfig = `version: 1
policy:
  write: allow
pool:
  labels:
    - {label: untrusted-input, tools: [fetch]}
    - {label: egress, tools: [append_note]}
  flows:
    - {id: ask-after-untrusted, after: [untrusted-input], calls: [egress], then: ask}
servers:
  notes:
    budgets:
      - {id: deletes-per-session, writes: destructive, max: 3, window: 1h, per: session}
      - {id: writes-per-principal, max: 6, window: 1h, per: principal}
      - {id: writes, max: 14, window: 1h}
    loopBreakers:
      - {id: loops, max: 2, window: 1h}
  trial:
    enforce: shadow
    budgets:
      - {id: trial-writes, max: 2, window: 1h}
`

// TestReplayReproducesGeneratedSessions: for generated traffic — callers
// naming sessions (some the same name), principals, destructive and plain
// writes, reads, repeated calls, a server in shadow mode — recorded as
// serve records it (answered with Dispatch, dispatched when allowed), a
// replay under the same config decides every call as it was decided, the
// budgets', loop breaker's and flow rule's refusals included. The
// property holds for every seed.
func TestReplayReproducesGeneratedSessions(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel() // they wait on the ledger's fsyncs, not the CPU
			dir := t.TempDir()
			cfg := filepath.Join(dir, "policy.yaml")
			if err := os.WriteFile(cfg, []byte(replayBudgetConfig), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: []string{cfg}, Env: []string{}, StateDir: filepath.Join(dir, "state")})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			rec, err := mcpxpolicy.OpenRecorder(mcpxpolicy.RecorderOptions{Dir: filepath.Join(dir, "rec")})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(seed, 30))
			tools := []struct {
				name              string
				read, destructive bool
			}{{"delete_note", false, true}, {"append_note", false, false}, {"fetch", true, false}, {"read_note", true, false}}
			refused := map[decision.Code]int{}
			const n = 80
			for range n {
				tool := tools[r.IntN(len(tools))]
				server := []string{"notes", "notes", "notes", "trial"}[r.IntN(4)]
				doc, _ := json.Marshal(map[string]any{"server": server, "session": fmt.Sprint("s", r.IntN(2)),
					"principal": map[string]any{"id": fmt.Sprint("p", r.IntN(2))}, "args": map[string]any{"id": r.IntN(4)},
					"tool": map[string]any{"name": tool.name, "annotations": map[string]any{"readOnlyHint": tool.read, "destructiveHint": tool.destructive}}})
				ans := eng.Answer(ctx, doc, mcpxpolicy.AnswerOptions{DefaultSurface: mcpxpolicy.SurfaceDaemon, Dispatch: true,
					Caller: fmt.Sprint("daemon:10.0.0.", r.IntN(2))})
				d := ans.Decision.Decision()
				if ans.Err != nil || ans.Unread != nil {
					t.Fatalf("%s: %v %v", doc, ans.Err, ans.Unread)
				}
				refused[d.Enforced().First().Code]++
				if err := rec.Record(ans.Call, ans.Decision, eng.Revision(), d.Outcome == decision.Allow, false); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []decision.Code{decision.WriteBudgetExceeded, decision.RepeatedCall, decision.FlowNeedsConfirmation} {
				if refused[c] == 0 {
					t.Errorf("the generated traffic never produced %s (%v): change the generator", c, refused)
				}
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{"replay", "--config", cfg, filepath.Join(dir, "rec")}, &stdout, &stderr)
			if want := fmt.Sprintf("replayed %d calls: 0 decided differently (its recorded decision), 0 not comparable", n); code != 0 || !strings.Contains(stdout.String(), want) {
				t.Errorf("replay exited %d, want %q:\n%s%s", code, want, stdout.String(), stderr.String())
			}
		})
	}
}

// TestReplayCountsApprovedWrites: serve records a write a person approved
// (held out of band, approved, sent again) as dispatched and approved.
// Replay cannot decide it with the approval — it is not comparable — but
// counts its write, so the next write, past the budget of one, is decided
// again as the budget's deny.
func TestReplayCountsApprovedWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "policy.yaml")
	conf := "version: 1\npolicy:\n  write: ask\nservers:\n  notes:\n    budgets:\n      - {id: one-write, max: 1, window: 1h}\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: []string{cfg}, Env: []string{}, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rec, err := mcpxpolicy.OpenRecorder(mcpxpolicy.RecorderOptions{Dir: filepath.Join(dir, "rec")})
	if err != nil {
		t.Fatal(err)
	}
	doc := func(id int) []byte {
		return []byte(fmt.Sprintf(`{"server": "notes", "tool": {"name": "append_note", "annotations": {"readOnlyHint": false}}, "args": {"id": %d}}`, id))
	}
	answer := func(raw []byte) mcpxpolicy.Answer {
		t.Helper()
		// as serve answers and records POST /v1/decide
		ans := eng.Answer(ctx, raw, mcpxpolicy.AnswerOptions{OutOfBand: true, Dispatch: true, Caller: "daemon:10.0.0.1"})
		allowed := ans.Err == nil && ans.Decision.Decision().Outcome == decision.Allow
		if ans.Approval == "" || allowed {
			if err := rec.Record(ans.Call, ans.Decision, eng.Revision(), allowed, ans.Approval != ""); err != nil {
				t.Fatal(err)
			}
		}
		return ans
	}
	held := answer(doc(1))
	if held.Held == nil {
		t.Fatalf("the first write was not held for a person: %+v", held.Decision.Decision())
	}
	if _, err := eng.Approvals().Approve(held.Held.ID, held.Held.SHA256); err != nil {
		t.Fatal(err)
	}
	if ran := answer(doc(1)); ran.Decision.Decision().Outcome != decision.Allow || ran.Approval == "" {
		t.Fatalf("the approved write sent again: %+v", ran.Decision.Decision())
	}
	if past := answer(doc(2)); past.Decision.Decision().First().Code != decision.WriteBudgetExceeded {
		t.Fatalf("the write past the budget: %+v", past.Decision.Decision())
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"replay", "--config", cfg, filepath.Join(dir, "rec")}, &stdout, &stderr)
	out := stdout.String()
	if code != 0 || !strings.Contains(out, "replayed 3 calls: 0 decided differently (its recorded decision), 1 not comparable") ||
		!strings.Contains(out, "not comparable: it ran with a person's approval") {
		t.Errorf("replay exited %d:\n%s%s", code, out, stderr.String())
	}
}
