package policy_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger/pgtest"
)

const budgetSDKConfig = `version: 1
policy:
  write: allow
servers:
  fs:
    budgets:
      - id: fs-writes
        max: 2
        window: 1h
        per: session
`

func fsBudgetCall(session, path string) decision.Call {
	return decision.Call{Surface: mcpxpolicy.SurfaceDaemon, Server: "fs", Session: session,
		Tool: decision.Tool{Name: "write_file", Annotations: &decision.Annotations{ReadOnlyHint: ptr(false)}},
		Args: map[string]any{"path": path}}
}

// dispatch begins and settles a write, as an SDK caller that runs it does.
func dispatch(t *testing.T, eng *mcpxpolicy.Engine, call decision.Call) error {
	t.Helper()
	d, err := eng.Writes().Begin(call)
	if err != nil {
		return err
	}
	d.Sent()
	return d.Settle()
}

// TestBudgetThroughTheSDK: an SDK caller's writes count when it begins
// them (Writes.Begin). The decision reads the count: after two writes of
// session s1 the third is a WriteBudgetExceeded deny, whatever the write
// mode (an ask beyond the budget is a deny); session s2 has its own; a
// read passes. Two writes decided allowed before either was dispatched
// cannot both pass the budget: the second Begin is refused with a
// *decision.Refusal carrying the deny, and nothing is recorded for it.
func TestBudgetThroughTheSDK(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, budgetSDKConfig)
	defer eng.Close()
	for i, p := range []string{"/a", "/b"} {
		if d := decide(t, eng, fsBudgetCall("s1", p)); d.Outcome != decision.Allow {
			t.Fatalf("write %d: %+v", i+1, d)
		}
		if err := dispatch(t, eng, fsBudgetCall("s1", p)); err != nil {
			t.Fatalf("dispatch %d: %v", i+1, err)
		}
	}
	d := decide(t, eng, fsBudgetCall("s1", "/c"))
	if d.Outcome != decision.Deny || d.Step != decision.StepBudget || d.First().Code != decision.WriteBudgetExceeded {
		t.Fatalf("third write of s1: %+v", d)
	}
	if !strings.Contains(d.First().Message, "and 2 were dispatched") {
		t.Errorf("message %q", d.First().Message)
	}
	ask := fsBudgetCall("s1", "/c")
	ask.Mode = "ask"
	if d := decide(t, eng, ask); d.Outcome != decision.Deny || d.First().Code != decision.WriteBudgetExceeded {
		t.Errorf("an ask beyond the budget: %+v; want its deny", d)
	}
	read := fsBudgetCall("s1", "/c")
	read.Tool.Annotations.ReadOnlyHint = ptr(true)
	if d := decide(t, eng, read); d.Outcome != decision.Allow {
		t.Errorf("a read: %+v", d)
	}
	// two decided before either is dispatched: the store's check at
	// dispatch refuses the second
	x, y := fsBudgetCall("s2", "/x"), fsBudgetCall("s2", "/y")
	if err := dispatch(t, eng, fsBudgetCall("s2", "/w")); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, eng, x); d.Outcome != decision.Allow {
		t.Fatalf("s2 x: %+v", d)
	}
	if d := decide(t, eng, y); d.Outcome != decision.Allow {
		t.Fatalf("s2 y: %+v", d)
	}
	if err := dispatch(t, eng, x); err != nil {
		t.Fatal(err)
	}
	err := dispatch(t, eng, y)
	var refused *decision.Refusal
	if !errors.As(err, &refused) || refused.Decision.First().Code != decision.WriteBudgetExceeded || refused.Decision.Outcome != decision.Deny {
		t.Fatalf("the second dispatch past the budget: %v", err)
	}
	if st, err := eng.Writes().List(); err != nil || st.InFlight != 0 || len(st.Entries) != 0 {
		t.Errorf("after a refused Begin: %+v %v", st, err)
	}
}

// TestBudgetClockGoesBack: the counts are the store's. Two writes the
// ledger recorded half an hour in the future (the clock went back since)
// still fill the window — the budget is not reset by the jump — and the
// retry time is theirs plus the window, not an hour from the clock now.
func TestBudgetClockGoesBack(t *testing.T) {
	t.Parallel()
	eng, dir := newEngine(t, budgetSDKConfig)
	defer eng.Close()
	if err := dispatch(t, eng, fsBudgetCall("s1", "/a")); err != nil { // makes the state dir and the ledger
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state", "ledger.json")
	future := time.Now().Add(30 * time.Minute).UTC().Truncate(time.Second)
	rec := func(id string) string {
		return `{"id": "` + id + `", "server": "fs", "tool": "write_file", "destructive": true, "session": "session:s1", "time": "` + future.Format(time.RFC3339Nano) + `"}`
	}
	doc := `{"version": 1, "entries": [], "cleared": [], "in_flight": [], "dispatched": [` + rec("f1") + `, ` + rec("f2") + `]}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	d := decide(t, eng, fsBudgetCall("s1", "/b"))
	want := "refused until " + future.Add(time.Hour).Format(time.RFC3339)
	if d.Outcome != decision.Deny || d.First().Code != decision.WriteBudgetExceeded || !strings.Contains(d.First().Message, want) {
		t.Fatalf("with two records from the future: %+v; want WriteBudgetExceeded %s", d, want)
	}
	var refused *decision.Refusal
	if err := dispatch(t, eng, fsBudgetCall("s1", "/b")); !errors.As(err, &refused) {
		t.Errorf("a dispatch past the budget: %v", err)
	}
}

// budgetFleetConfig keeps the ledger, and so the budgets' counts, in the
// PostgreSQL database $FLEET_DSN names.
const budgetFleetConfig = `version: 1
policy:
  write: allow
servers:
  fs:
    budgets:
      - id: fleet-writes
        max: 3
        window: 1h
ledger:
  store: postgres
  dsnEnv: FLEET_DSN
`

// TestBudgetFleetSharesThePostgresCount: two gateways (Engines) on one
// PostgreSQL ledger share a budget: writes either dispatches count for
// both, the next decision through either is the deny once three went out,
// and a write each decided allowed before the last count is refused at
// dispatch on the one that came second.
func TestBudgetFleetSharesThePostgresCount(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	open := func() *mcpxpolicy.Engine {
		dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": budgetFleetConfig})
		eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{
			ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")},
			Env:         []string{"FLEET_DSN=" + dsn},
			StateDir:    filepath.Join(dir, "state"),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		return eng
	}
	a, b := open(), open()
	if err := dispatch(t, a, fsBudgetCall("", "/1")); err != nil {
		t.Fatal(err)
	}
	if err := dispatch(t, b, fsBudgetCall("", "/2")); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, a, fsBudgetCall("", "/3")); d.Outcome != decision.Allow {
		t.Fatalf("a: %+v", d)
	}
	if d := decide(t, b, fsBudgetCall("", "/4")); d.Outcome != decision.Allow {
		t.Fatalf("b: %+v", d)
	}
	if err := dispatch(t, a, fsBudgetCall("", "/3")); err != nil {
		t.Fatal(err)
	}
	var refused *decision.Refusal
	if err := dispatch(t, b, fsBudgetCall("", "/4")); !errors.As(err, &refused) || refused.Decision.First().Code != decision.WriteBudgetExceeded {
		t.Fatalf("b's dispatch after a's spent the budget: %v", err)
	}
	for name, eng := range map[string]*mcpxpolicy.Engine{"a": a, "b": b} {
		if d := decide(t, eng, fsBudgetCall("", "/5")); d.Outcome != decision.Deny || d.First().Code != decision.WriteBudgetExceeded ||
			!strings.Contains(d.First().Message, "and 3 were dispatched") {
			t.Errorf("%s: the next write: %+v", name, d)
		}
	}
}

// TestBudgetStoreUnreadableDeniesWrites: a ledger whose counted writes do
// not read (a record without a time) is unreadable: a write a budget
// counts is denied (LedgerUnreadable, and the budget's own fail-closed
// deny), a read still passes, and Begin records nothing.
func TestBudgetStoreUnreadableDeniesWrites(t *testing.T) {
	t.Parallel()
	eng, dir := newEngine(t, budgetSDKConfig)
	defer eng.Close()
	if err := dispatch(t, eng, fsBudgetCall("s1", "/a")); err != nil {
		t.Fatal(err)
	}
	doc := `{"version": 1, "entries": [], "cleared": [], "in_flight": [], "dispatched": [{"id": "x", "server": "fs", "tool": "write_file", "time": "yesterday"}]}`
	if err := os.WriteFile(filepath.Join(dir, "state", "ledger.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	d := decide(t, eng, fsBudgetCall("s1", "/b"))
	if d.Outcome != decision.Deny || !slices.Equal(codes(d.Reasons), []decision.Code{decision.LedgerUnreadable, decision.WriteBudgetExceeded}) {
		t.Fatalf("a write while the counts do not read: %+v", d)
	}
	read := fsBudgetCall("s1", "/b")
	read.Tool.Annotations.ReadOnlyHint = ptr(true)
	if d := decide(t, eng, read); d.Outcome != decision.Allow {
		t.Errorf("a read: %+v", d)
	}
	if err := dispatch(t, eng, fsBudgetCall("s1", "/b")); err == nil {
		t.Errorf("Begin recorded a write while the ledger does not read")
	}
}

// TestBudgetShadow: a server in shadow mode counts its writes but a spent
// budget refuses nothing: the decision is an allow whose shadow says the
// policy would have denied with WriteBudgetExceeded, and Begin counts the
// write instead of refusing it.
func TestBudgetShadow(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, `version: 1
policy:
  write: allow
servers:
  fs:
    enforce: shadow
    budgets:
      - {id: fs-writes, max: 1, window: 1h}
`)
	defer eng.Close()
	for i := range 3 {
		c := fsBudgetCall("", fmt.Sprint("/", i))
		d := decide(t, eng, c)
		if d.Outcome != decision.Allow {
			t.Fatalf("write %d in shadow mode: %+v", i+1, d)
		}
		if i > 0 && (!d.Relaxed() || d.Enforced().First().Code != decision.WriteBudgetExceeded) {
			t.Errorf("write %d: the shadow decision %+v; want the budget's deny", i+1, d.Enforced())
		}
		if err := dispatch(t, eng, c); err != nil {
			t.Fatalf("dispatch %d in shadow mode: %v", i+1, err)
		}
	}
}
