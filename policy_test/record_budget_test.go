package policy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const replayBudgetConfig = `version: 1
policy:
  write: allow
servers:
  notes:
    budgets:
      - {id: note-deletes, writes: destructive, max: %d, window: 1h, per: session}
    loopBreakers:
      - {id: note-loops, max: %d, window: 1h}
`

// TestReplayReproducesBudgetDecisions: a session recorded through serve
// spends a budget per session and trips a loop breaker; replayed under
// the config it was recorded with, every decision — the budget's and the
// loop breaker's denies included — is decided again as it was (0 decided
// differently, 0 not comparable), because replay counts the writes the
// recording says serve dispatched, on the recording's clock. Under a
// config with a larger budget and a smaller loop breaker, the two changed
// decisions are reported: the third delete now passes, the second
// identical append is now refused.
func TestReplayReproducesBudgetDecisions(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"policy.yaml": fmt.Sprintf(replayBudgetConfig, 2, 2),
		"next.yaml":   fmt.Sprintf(replayBudgetConfig, 3, 1),
	})
	rec := filepath.Join(dir, "rec")
	p := runServe(t, nil, "--config", filepath.Join(dir, "policy.yaml"), "--state-dir", filepath.Join(dir, "state"), "--record", rec)
	doc := func(session, tool string, destructive bool, args string) string {
		return fmt.Sprintf(`{"server": "notes", "session": %q, "tool": {"name": %q, "annotations": {"readOnlyHint": false, "destructiveHint": %v}}, "args": %s}`,
			session, tool, destructive, args)
	}
	calls := []struct{ doc, want string }{
		{doc("s1", "delete_note", true, `{"id": 1}`), "allow"},
		{doc("s1", "delete_note", true, `{"id": 2}`), "allow"},
		{doc("s1", "delete_note", true, `{"id": 3}`), "WriteBudgetExceeded"},
		{doc("s2", "delete_note", true, `{"id": 4}`), "allow"},
		{doc("s1", "append_note", false, `{"text": "same"}`), "allow"},
		{doc("s1", "append_note", false, `{"text": "same"}`), "allow"},
		{doc("s1", "append_note", false, `{"text": "same"}`), "RepeatedCall"},
		{doc("s1", "append_note", false, `{"text": "other"}`), "allow"},
	}
	for i, c := range calls {
		status, _, body := p.post(t, "/v1/decide", c.doc)
		var a struct {
			Outcome string
			Reasons []struct{ Code string }
		}
		if err := json.Unmarshal(body, &a); status != 200 || err != nil {
			t.Fatalf("call %d: %d %s", i+1, status, body)
		}
		got := a.Outcome
		if got != "allow" && len(a.Reasons) > 0 {
			got = a.Reasons[0].Code
		}
		if got != c.want {
			t.Fatalf("call %d decided live: %s, want %s: %s", i+1, got, c.want, body)
		}
	}
	names, _ := recordedFiles(t, rec)
	if len(names) != len(calls) {
		t.Fatalf("%d records of %d calls", len(names), len(calls))
	}
	first, err := os.ReadFile(filepath.Join(rec, names[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(first), `"dispatched": true`) {
		t.Errorf("the first record does not say it was dispatched:\n%s", first)
	}

	out, code := runBin(t, "replay", "--config", filepath.Join(dir, "policy.yaml"), rec)
	if code != 0 || !strings.Contains(out, "replayed 8 calls: 0 decided differently (its recorded decision), 0 not comparable") {
		t.Errorf("replay under the recording's config: exit %d\n%s", code, out)
	}
	out, code = runBin(t, "replay", "--config", filepath.Join(dir, "next.yaml"), rec)
	for _, want := range []string{
		"replayed 8 calls: 2 decided differently (its recorded decision), 0 not comparable",
		"notes.delete_note: deny (budget WriteBudgetExceeded) -> allow",
		"notes.append_note: allow -> deny (budget RepeatedCall)",
	} {
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("replay under a larger budget and a smaller loop breaker: exit %d, want %q\n%s", code, want, out)
		}
	}
	out, code = runBin(t, "replay", "--config", filepath.Join(dir, "policy.yaml"), "--against", filepath.Join(dir, "next.yaml"), rec)
	if code != 2 || !strings.Contains(out, "replayed 8 calls: 2 decided differently (--config and --against), 0 not comparable") {
		t.Errorf("replay --against: exit %d\n%s", code, out)
	}
}
