package policy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

const ledgerConfig = `version: 1
policy:
  write: allow
`

// TestUnknownOutcomeBlocksWritesUntilCleared goes through the dispatch
// lifecycle: a lost write blocks further writes to that server (not reads,
// not other servers) until an operator clears it.
func TestUnknownOutcomeBlocksWritesUntilCleared(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, ledgerConfig)
	write := decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/a", "content": "x"}, Surface: "mcp"}

	settled, err := eng.Writes().Begin(write)
	if err != nil {
		t.Fatal(err)
	}
	settled.Sent()
	if err := settled.Settle(); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, eng, write); d.Outcome != decision.Allow {
		t.Fatalf("after a settled write: %s %v", d.Outcome, d.Reasons)
	}

	lost, err := eng.Writes().Begin(write)
	if err != nil {
		t.Fatal(err)
	}
	lost.Sent()
	if err := lost.Unknown("timeout"); err != nil {
		t.Fatal(err)
	}
	d := decide(t, eng, write)
	if d.Outcome != decision.Deny || d.Step != "ledger" || d.Reasons[0].Code != decision.UnknownOutcomePending {
		t.Fatalf("after a lost write: %s %s %v", d.Outcome, d.Step, codes(d.Reasons))
	}
	msg := d.Reasons[0].Message
	for _, want := range []string{"id " + lost.ID, "write_file at ", "mcpx-policy writes clear fs"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if d := decide(t, eng, decision.Call{Server: "fs", Tool: readFile, Args: map[string]any{"path": "/a"}}); d.Outcome != decision.Allow {
		t.Fatalf("a read after a lost write: %s", d.Outcome)
	}
	if d := decide(t, eng, decision.Call{Server: "git", Tool: writeFile}); d.Outcome != decision.Allow {
		t.Fatalf("a write to another server: %s", d.Outcome)
	}
	ws, err := entries(eng.Writes().List())
	if err != nil || len(ws) != 1 || ws[0].ID != lost.ID {
		t.Fatalf("UnknownWrites = %v, %v", ws, err)
	}
	if _, err := eng.Writes().Clear("fs", lost.ID, "checked: file written"); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, eng, write); d.Outcome != decision.Allow {
		t.Fatalf("after clear: %s %v", d.Outcome, d.Reasons)
	}
}

// TestUnreadableLedgerBlocksWrites: a corrupt ledger denies every write with
// LedgerUnreadable, lets reads through, and is never overwritten.
func TestUnreadableLedgerBlocksWrites(t *testing.T) {
	t.Parallel()
	eng, dir := newEngine(t, ledgerConfig)
	path := filepath.Join(dir, "state", "ledger.json")
	corrupt := []byte(`{"version": 1, "entries": [`)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, corrupt, 0o600); err != nil {
		t.Fatal(err)
	}
	d := decide(t, eng, decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/a"}})
	if d.Outcome != decision.Deny || d.Step != "ledger" || !sameCodes(codes(d.Reasons), []decision.Code{decision.LedgerUnreadable}) {
		t.Fatalf("write with a corrupt ledger: %s %s %v", d.Outcome, d.Step, codes(d.Reasons))
	}
	if d := decide(t, eng, decision.Call{Server: "fs", Tool: readFile, Args: map[string]any{"path": "/a"}}); d.Outcome != decision.Allow {
		t.Fatalf("read with a corrupt ledger: %s", d.Outcome)
	}
	if _, err := eng.Writes().Begin(decision.Call{Server: "fs", Tool: writeFile}); err == nil {
		t.Fatal("BeginWrite on a corrupt ledger succeeded")
	}
	if got, _ := os.ReadFile(path); string(got) != string(corrupt) {
		t.Fatalf("corrupt ledger was overwritten: %q", got)
	}
}

// entries are the unknown-outcome entries of a ledger listing.
func entries(st mcpxpolicy.WritesState, err error) ([]decision.UnknownWrite, error) {
	return st.Entries, err
}
