package pgstate_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/approval"
	"github.com/mcpx/mcpx-policy/internal/approval/approvaltest"
	"github.com/mcpx/mcpx-policy/internal/crashtest"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger/pgtest"
	"github.com/mcpx/mcpx-policy/internal/pgstate"
	"github.com/mcpx/mcpx-policy/internal/pins"
	"github.com/mcpx/mcpx-policy/internal/pins/pinstest"
)

// childEnv makes the test binary a crash child (TestMain); childDSN names
// its database.
const (
	childEnv = "MCPX_PGSTATE_TEST_CHILD"
	childDSN = "MCPX_PGSTATE_TEST_DSN"
)

func TestMain(m *testing.M) {
	crashtest.Main(m, childEnv, map[string]func(){
		"approvals": func() { approvaltest.CrashChild(childDB().Approvals(approvaltest.CrashOptions()...)) },
		"pins":      func() { pinsChild(childDB().Pins(nil)) },
	})
}

func childDB() *pgstate.DB {
	s, err := pgledger.Open(os.Getenv(childDSN), "test", pgledger.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return pgstate.New(s.Pool(), s.Where(), s.Timeout())
}

// db opens the database dsn as a gateway of its own would: a pool of its
// own, closed when the test ends.
func db(t *testing.T, dsn string) *pgstate.DB {
	t.Helper()
	s, err := pgledger.Open(dsn, "test", pgledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return pgstate.New(s.Pool(), s.Where(), s.Timeout())
}

// TestApprovals runs the behaviour every approval store promises on the
// database: each Backend on a pool of its own, as gateways have.
func TestApprovals(t *testing.T) {
	approvaltest.Run(t, func(t *testing.T) approvaltest.Opener {
		dsn := pgtest.DSN(t)
		return func(opts ...approval.Option) approval.Backend { return db(t, dsn).Approvals(opts...) }
	})
}

// TestPins runs the behaviour every pin store promises on the database.
func TestPins(t *testing.T) {
	pinstest.Run(t, func(t *testing.T) pinstest.Opener {
		dsn := pgtest.DSN(t)
		return func() pins.Backend { return db(t, dsn).Pins(nil) }
	})
}

// TestUnusableDatabase: tables of a newer version, a row that does not
// read, and a database that does not answer fail every operation with an
// *UnreadableError that names the database and says what to check; the
// rows are left as they were.
func TestUnusableDatabase(t *testing.T) {
	t.Parallel()
	t.Run("newer", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.DSN(t)
		a, p := db(t, dsn).Approvals(), db(t, dsn).Pins(nil)
		if _, err := a.List(); err != nil { // makes the tables
			t.Fatal(err)
		}
		pgtest.Exec(t, dsn, "UPDATE mcpx_state_meta SET version = 2")
		a, p = db(t, dsn).Approvals(), db(t, dsn).Pins(nil)
		if _, err := a.Request(approvaltest.Record(approvaltest.SumA)); !errors.Is(err, approval.ErrNewerVersion) || !errors.Is(err, approval.ErrUnreadable) {
			t.Errorf("request on newer tables: %v", err)
		}
		if _, err := p.See("fs", pinstest.Seen(t, pinstest.WriteFile)); !errors.Is(err, pins.ErrNewerVersion) {
			t.Errorf("see on newer tables: %v", err)
		}
	})
	t.Run("bad-row", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.DSN(t)
		p := db(t, dsn).Pins(nil)
		if _, err := p.See("fs", pinstest.Seen(t, pinstest.WriteFile)); err != nil {
			t.Fatal(err)
		}
		pgtest.Exec(t, dsn, `UPDATE mcpx_pins SET pinned = '{"sha256":"x","fields":{},"seen":"2026-01-01T00:00:00Z","trusted":true}'`)
		if _, err := p.See("fs", pinstest.Seen(t, pinstest.WriteFile)); !errors.Is(err, pins.ErrUnreadable) {
			t.Errorf("see of a row that does not read: %v", err)
		}
		if _, err := p.List(); !errors.Is(err, pins.ErrUnreadable) {
			t.Errorf("list with a row that does not read: %v", err)
		}
	})
	t.Run("down", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.WithParam(t, pgtest.WithDatabase(t, pgtest.Base(t), "mcpx_no_such_database"), "connect_timeout", "2")
		a := db(t, dsn).Approvals()
		_, err := a.Request(approvaltest.Record(approvaltest.SumA))
		var ue *approval.UnreadableError
		if !errors.As(err, &ue) || ue.Hint == "" || !strings.Contains(err.Error(), "approval store") || strings.Contains(err.Error(), "password") {
			t.Errorf("request on a database that does not answer: %v", err)
		}
		if _, err := a.Consume(approval.NewID(), approvaltest.SumA, "bind-1"); !errors.Is(err, approval.ErrUnreadable) {
			t.Errorf("consume on a database that does not answer: %v", err)
		}
	})
}

// TestCrashKill runs two children on one database, each requesting,
// approving and using approvals (and racing to use each other's), and
// SIGKILLs them at random moments: after each kill no approval was used
// twice, and every request, answer and use a child reported is in the
// database (approvaltest.CrashBook). MCPX_PGSTATE_CRASH_KILLS sets the
// number of rounds (40 in a full run, MCPX_POLICY_TEST_FULL=1; 10 in a quick one).
func TestCrashKill(t *testing.T) {
	kills := crashtest.Kills("MCPX_PGSTATE_CRASH_KILLS", 40, 10)
	dsn := pgtest.DSN(t)
	open := func() approval.Backend { return db(t, dsn).Approvals(approvaltest.CrashOptions()...) }
	book := approvaltest.RunCrash(t, kills, open, childEnv+"=approvals", childDSN+"="+dsn)
	requested, approved, used := book.Counts()
	t.Logf("%d rounds of two kills: %d requests, %d approvals, %d uses reported, each once; %d uses in doubt at a kill, spent and never run twice",
		kills, requested, approved, used, book.Doubts)
	if used == 0 {
		t.Fatal("no use was reported: the children did not get far enough to test anything")
	}
}

// pinsChild pins new tools and changes and accepts them until it is
// killed, reporting each step after it returned:
//
//	PINNED <tool> <sha256>    See pinned the tool (trust on first use)
//	ACCEPTED <tool> <sha256>  Accept made this definition the pin
func pinsChild(s pins.Backend) {
	if _, err := s.List(); err != nil { // connected, the tables made: the kills land in the work
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	crashtest.Say("READY")
	base := rand.Int64()
	for i := 0; ; i++ {
		tool := decision.Tool{Name: fmt.Sprintf("t%d-%d", base, i), Description: "first"}
		d, _ := pins.SeenTool(tool)
		st, err := s.See("srv", d)
		if err == nil && st.State == pins.New {
			crashtest.Say("PINNED", tool.Name, d.SHA256)
		}
		if err == nil && i%2 == 1 {
			tool.Description = "changed"
			d, _ = pins.SeenTool(tool)
			if _, err = s.See("srv", d); err == nil {
				if _, err = s.Accept("srv", tool.Name, d.SHA256); err == nil {
					crashtest.Say("ACCEPTED", tool.Name, d.SHA256)
				}
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

// TestPinsCrashKill SIGKILLs a child at random moments while it pins and
// accepts on the database, and checks after each kill that every pin and
// acceptance it reported holds. MCPX_PGSTATE_CRASH_KILLS sets the number
// of kills (40 in a full run, MCPX_POLICY_TEST_FULL=1; 10 in a quick one).
func TestPinsCrashKill(t *testing.T) {
	kills := crashtest.Kills("MCPX_PGSTATE_CRASH_KILLS", 40, 10)
	dsn := pgtest.DSN(t)
	s := db(t, dsn).Pins(nil)
	want := map[string]string{}
	for k := range kills {
		c, err := crashtest.Start(childEnv+"=pins", childDSN+"="+dsn)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Ready(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(80_000)) * time.Microsecond)
		lines, err := c.Kill()
		if err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		for _, l := range lines {
			if f := strings.Fields(l); len(f) == 3 && (f[0] == "PINNED" || f[0] == "ACCEPTED") {
				want[f[1]] = f[2]
			}
		}
		list, err := s.List()
		if err != nil {
			t.Fatalf("kill %d: the pins do not read: %v", k, err)
		}
		have := map[string]pins.Pin{}
		for _, p := range list {
			have[p.Tool] = p
		}
		for tool, sum := range want {
			p, ok := have[tool]
			if !ok {
				t.Fatalf("kill %d: %s was reported pinned and is not in the database", k, tool)
			}
			if p.Pinned.SHA256 != sum && p.Accepted.IsZero() {
				t.Fatalf("kill %d: %s is pinned to %s; want %s", k, tool, p.Pinned.SHA256, sum)
			}
		}
	}
	t.Logf("%d kills; %d pins and acceptances reported, all in the database", kills, len(want))
}
