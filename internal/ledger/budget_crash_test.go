package ledger_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/crashtest"
	"github.com/mcpx/mcpx-policy/internal/ledger"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger/pgtest"
)

// budgetServer names, for the budget child, the server whose writes it
// counts (a fresh one each round).
const budgetServer = "MCPX_LEDGER_TEST_BUDGET_SERVER"

// budgetMax is the crash test's budget: small enough that most rounds
// spend it.
const budgetMax = 8

func budgetLimit(server string) ledger.Limit {
	return ledger.Limit{ID: "b", Max: budgetMax, Window: time.Hour, Counts: func(r ledger.Counted) bool { return r.Server == server }}
}

// budgetChild is the child role of TestBudgetCrashKill: 4 goroutines
// count writes against one budget until the parent kills the process:
//
//	COUNTED <id>  BeginCounted returned: the write is counted
//	SPENT         BeginCounted refused it: the budget is spent
func budgetChild() {
	l, err := childStore()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	server := os.Getenv(budgetServer)
	c := &ledger.Counting{Record: ledger.Counted{Server: server, Tool: "write"}, Limits: []ledger.Limit{budgetLimit(server)}, Retain: time.Hour}
	if os.Getenv(childDSN) != "" {
		// connect before READY, as crashChild does, so the kills land
		// while it counts
		w, err := l.BeginCounted("warm-up", "write", nil, "test", &ledger.Counting{Limits: []ledger.Limit{budgetLimit("warm-up")}, Shadow: true})
		if err == nil {
			err = w.Settle()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	crashtest.Say("READY", strconv.Itoa(os.Getpid()))
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				w, err := l.BeginCounted(server, "write", map[string]any{"g": g, "i": i}, "test", c)
				var spent *ledger.BudgetError
				switch {
				case errorsAs(err, &spent):
					crashtest.Say("SPENT", "-")
					time.Sleep(time.Millisecond)
					continue
				case err != nil:
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				crashtest.Say("COUNTED", w.ID())
				w.Sent()
				if err := w.Settle(); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
			}
		}()
	}
	select {}
}

// TestBudgetCrashKill: a child counting writes against one budget from 4
// goroutines is SIGKILLed at a random moment; after each kill the store's
// count is never below the writes the child reported counted (none lost),
// never above the budget's max, never above those plus the 4 that may
// have been counting when it died (none counted twice), and every record
// is one dispatch's. MCPX_LEDGER_BUDGET_KILLS sets the number of kills
// (200 in a full run; else 20).
func TestBudgetCrashKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	budgetCrashKill(t, open(t, dir), []string{childDir + "=" + dir})
}

// TestBudgetCrashKillPostgres is TestBudgetCrashKill on the PostgreSQL
// store.
func TestBudgetCrashKillPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	s, err := pgledger.Open(dsn, "test", pgledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	budgetCrashKill(t, s, []string{childDSN + "=" + dsn})
}

func budgetCrashKill(t *testing.T, l ledger.Store, env []string) {
	kills := crashtest.Kills("MCPX_LEDGER_BUDGET_KILLS", 200, 20)
	spentRounds := 0
	for k := range kills {
		server := "srv-" + strconv.Itoa(k)
		c, err := crashtest.Start(append([]string{childEnv + "=budget", budgetServer + "=" + server}, env...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Ready(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(150_000)) * time.Microsecond)
		lines, err := c.Kill()
		if err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		counted := 0
		spent := false
		for _, line := range lines {
			switch {
			case strings.HasPrefix(line, "COUNTED "):
				counted++
			case strings.HasPrefix(line, "SPENT"):
				spent = true
			}
		}
		if spent {
			spentRounds++
		}
		ts, err := l.Tally(server, []ledger.Limit{budgetLimit(server)})
		if err != nil || len(ts) != 1 {
			t.Fatalf("kill %d: Tally: %v %v", k, ts, err)
		}
		n := ts[0].Count
		switch {
		case n < counted:
			t.Errorf("kill %d: the store counts %d writes, the child reported %d counted: lost counts", k, n, counted)
		case n > budgetMax:
			t.Errorf("kill %d: the store counts %d writes, past the budget's %d", k, n, budgetMax)
		case n > counted+4:
			t.Errorf("kill %d: the store counts %d writes, the child reported %d counted and at most 4 in progress: counted twice", k, n, counted)
		case spent && n != budgetMax:
			t.Errorf("kill %d: the child was refused but the store counts %d of %d", k, n, budgetMax)
		}
	}
	if f, ok := l.(*ledger.Ledger); ok {
		b, err := os.ReadFile(filepath.Join(f.Dir(), ledger.FileName))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Dispatched []ledger.Counted `json:"dispatched"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, r := range doc.Dispatched {
			if ids[r.ID] {
				t.Errorf("record %s is in the file twice", r.ID)
			}
			ids[r.ID] = true
		}
	}
	t.Logf("%d kills, %d of them after the budget was spent", kills, spentRounds)
}

func errorsAs(err error, target **ledger.BudgetError) bool {
	be, ok := err.(*ledger.BudgetError)
	if ok {
		*target = be
	}
	return ok
}
