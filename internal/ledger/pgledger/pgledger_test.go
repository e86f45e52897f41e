package pgledger_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/ledger"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger/pgtest"
)

func open(t *testing.T, dsn string) *pgledger.Store {
	t.Helper()
	s, err := pgledger.Open(dsn, "test", pgledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func pending(t *testing.T, s ledger.Store, server string) ledger.Pending {
	t.Helper()
	p, err := s.Pending(server, -1)
	if err != nil {
		t.Fatalf("Pending(%s): %v", server, err)
	}
	return p
}

func begin(t *testing.T, s ledger.Store, server string, i int) ledger.Write {
	t.Helper()
	w, err := s.BeginWrite(server, "write_file", map[string]any{"i": i}, "mcp")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestLifecycle: the dispatch lifecycle, listing and clearing on the
// PostgreSQL store, as on the file store.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.DSN(t))
	if p := pending(t, s, "fs"); p.Total != 0 {
		t.Fatalf("empty ledger: %+v", p)
	}
	settled := begin(t, s, "fs", 1)
	settled.Sent()
	if err := settled.Settle(); err != nil {
		t.Fatal(err)
	}
	aborted := begin(t, s, "fs", 2)
	if err := aborted.Abort(); err != nil {
		t.Fatal(err)
	}
	inFlight := begin(t, s, "fs", 3)
	lost := begin(t, s, "fs", 4)
	lost.Sent()
	if err := lost.Unknown("timeout"); err != nil {
		t.Fatal(err)
	}
	late := begin(t, s, "git", 5)
	late.Sent()
	if err := late.Abort(); err != nil { // after Sent: an unknown outcome
		t.Fatal(err)
	}
	if err := lost.Settle(); err != nil { // a second ending does nothing
		t.Fatal(err)
	}
	p := pending(t, s, "fs")
	if p.Total != 1 || len(p.Entries) != 1 || p.Entries[0].ID != lost.ID() || p.Entries[0].Tool != "write_file" || len(p.Entries[0].ArgsSHA256) != 64 {
		t.Fatalf("Pending(fs) = %+v; want the lost write only", p)
	}
	st, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Entries) != 2 || len(st.InFlight) != 1 || st.InFlight[0].ID != inFlight.ID() || st.Entries[1].Cause != "aborted after the request was sent" {
		t.Fatalf("List = %+v", st)
	}
	counts, err := s.Counts()
	if err != nil || counts["fs"] != 1 || counts["git"] != 1 || len(counts) != 2 {
		t.Fatalf("Counts = %v, %v", counts, err)
	}
	if _, err := s.Clear("fs", "nope", "x"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("Clear of an unknown id = %v; want ErrNotFound", err)
	}
	cleared, err := s.Clear("fs", lost.ID(), "checked: the file is there")
	if err != nil || len(cleared) != 1 || cleared[0].ID != lost.ID() {
		t.Fatalf("Clear(fs, id) = %v, %v", cleared, err)
	}
	cleared, err = s.Clear("fs", "", "none left")
	if err != nil || len(cleared) != 0 {
		t.Fatalf("Clear(fs) again = %v, %v; want none", cleared, err)
	}
	if p := pending(t, s, "fs"); p.Total != 0 {
		t.Fatalf("after clear: %+v", p)
	}
	st, _ = s.List()
	if len(st.Cleared) != 1 || st.Cleared[0].Reason != "checked: the file is there" || st.Cleared[0].ClearedAt == "" {
		t.Fatalf("cleared = %+v", st.Cleared)
	}
	if err := inFlight.Settle(); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestPendingLimit: Pending lists the oldest entries and counts them all.
func TestPendingLimit(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.DSN(t))
	var ids []string
	for i := range 12 {
		w := begin(t, s, "fs", i)
		ids = append(ids, w.ID())
		if err := w.Unknown("timeout"); err != nil {
			t.Fatal(err)
		}
	}
	p, err := s.Pending("fs", ledger.Listed)
	if err != nil {
		t.Fatal(err)
	}
	if p.Total != 12 || len(p.Entries) != ledger.Listed || p.Entries[0].ID != ids[0] || p.Entries[9].ID != ids[9] {
		t.Fatalf("Pending(fs, 10) = %d entries of %d; want the oldest 10 of 12", len(p.Entries), p.Total)
	}
}

// TestSharedAcrossStores: two stores on one database, as two gateways on
// two machines: an unknown outcome recorded through one blocks through
// the other at once; a clear through either unblocks both; a write in
// flight through one is in flight for the other.
func TestSharedAcrossStores(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	a, b := open(t, dsn), open(t, dsn)
	w := begin(t, a, "fs", 1)
	if p := pending(t, b, "fs"); p.Total != 0 {
		t.Fatalf("a write in flight through a counts as an entry through b: %+v", p)
	}
	w.Sent()
	if err := w.Unknown("transport closed"); err != nil {
		t.Fatal(err)
	}
	if p := pending(t, b, "fs"); p.Total != 1 || p.Entries[0].ID != w.ID() {
		t.Fatalf("through b after a's Unknown: %+v", p)
	}
	if _, err := b.Clear("fs", "", "checked"); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]ledger.Store{"a": a, "b": b} {
		if p := pending(t, s, "fs"); p.Total != 0 {
			t.Errorf("through %s after b's clear: %+v", name, p)
		}
	}
}

// TestDeadSessionIsAnEntry: when a process's owner session ends (its
// process died, its machine vanished and keepalives ended the session),
// its writes in flight are unknown-outcome entries for every reader at
// once, and Recover writes them down.
func TestDeadSessionIsAnEntry(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	a, b := open(t, dsn), open(t, dsn)
	w := begin(t, a, "fs", 1)
	w.Sent()
	// End a's owner session from the server's side, as keepalives do.
	pgtest.Exec(t, dsn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'mcpx-policy ledger owner' AND datname = current_database()")
	deadline := time.Now().Add(10 * time.Second)
	for pending(t, b, "fs").Total != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the marker of an ended session is not an entry: %+v", pending(t, b, "fs"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, _ := b.List()
	if len(st.Entries) != 1 || !strings.Contains(st.Entries[0].Cause, "exited while the call was in flight") {
		t.Fatalf("List = %+v", st)
	}
	n, err := b.Recover()
	if err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v; want 1", n, err)
	}
	// The owner's late Settle finds the entry there and leaves it.
	if err := w.Settle(); err != nil {
		t.Fatal(err)
	}
	if p := pending(t, a, "fs"); p.Total != 1 {
		t.Fatalf("after the late Settle: %+v; want the entry kept", p)
	}
	// a opens a new session for its next write.
	w2 := begin(t, a, "fs", 2)
	if p := pending(t, b, "fs"); p.Total != 1 {
		t.Fatalf("a's new write in flight counts: %+v", p)
	}
	w2.Settle()
}

// TestUnsavedUnknownBlocksEveryProcess: an Unknown whose entry cannot be
// saved (here the table refuses new rows) still blocks through every
// store at once, is retried until it is saved, and an operator may clear
// it before that; the late save then adds nothing.
func TestUnsavedUnknownBlocksEveryProcess(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	a, b := open(t, dsn), open(t, dsn)
	w1 := begin(t, a, "fs", 1)
	w2 := begin(t, a, "fs", 2)
	// New pending entries are refused; cleared ones are not.
	pgtest.Exec(t, dsn, "ALTER TABLE mcpx_ledger_entries ADD CONSTRAINT refuse CHECK (cleared_at IS NOT NULL) NOT VALID")
	if err := w1.Unknown("timeout"); err == nil {
		t.Fatal("Unknown saved into a table that refuses rows")
	}
	if err := w2.Unknown("timeout"); err == nil {
		t.Fatal("Unknown saved into a table that refuses rows")
	}
	for name, s := range map[string]ledger.Store{"a": a, "b": b} {
		p := pending(t, s, "fs")
		if p.Total != 2 {
			t.Fatalf("through %s while the saves fail: %+v; want both unknowns counted", name, p)
		}
	}
	// An operator clears w1 before it is saved.
	if cleared, err := b.Clear("fs", w1.ID(), "checked"); err != nil || len(cleared) != 1 {
		t.Fatalf("Clear of an unsaved unknown = %v, %v", cleared, err)
	}
	pgtest.Exec(t, dsn, "ALTER TABLE mcpx_ledger_entries DROP CONSTRAINT refuse")
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := b.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(st.InFlight) == 0 && len(st.Entries) == 1 && st.Entries[0].ID == w2.ID() && st.Entries[0].Cause == "timeout" {
			break // saved by the retrier, and w1 not brought back
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retrier did not save the unknown: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNewerSchemaIsUnreadable: tables of a newer version block writes and
// are not written.
func TestNewerSchemaIsUnreadable(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	if err := open(t, dsn).Check(); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, dsn, "UPDATE mcpx_ledger_meta SET version = 2")
	s := open(t, dsn)
	if _, err := s.Pending("fs", -1); !errors.Is(err, ledger.ErrNewerVersion) || !errors.Is(err, ledger.ErrUnreadable) {
		t.Fatalf("Pending = %v; want ErrNewerVersion", err)
	}
	if _, err := s.BeginWrite("fs", "w", nil, "mcp"); !errors.Is(err, ledger.ErrUnreadable) {
		t.Fatalf("BeginWrite = %v; want ErrUnreadable", err)
	}
}

// TestUnreachableDatabaseIsUnreadable: a database that does not answer is
// an UnreadableError naming it without the password.
func TestUnreachableDatabaseIsUnreadable(t *testing.T) {
	t.Parallel()
	s, err := pgledger.Open("postgres://gate:s3cr3t@127.0.0.1:1/mcpx?connect_timeout=2", "test", pgledger.Options{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Pending("fs", -1)
	var ue *ledger.UnreadableError
	if !errors.As(err, &ue) || ue.Path != "postgres://gate@127.0.0.1:1/mcpx" {
		t.Fatalf("Pending = %v; want an UnreadableError naming postgres://gate@127.0.0.1:1/mcpx", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(s.Where(), "s3cr3t") {
		t.Errorf("the error shows the password: %v", err)
	}
	if _, err := pgledger.Open("postgres://gate:s3cr3t@[bad", "ledger.dsn (main.yaml:3)", pgledger.Options{}); !errors.Is(err, pgledger.ErrDSN) || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("Open of a bad DSN = %v; want ErrDSN without the password", err)
	}
}
