// Package pgledger is the unknown-outcome ledger on PostgreSQL: the store
// a fleet of gateways in front of the same MCP servers shares, so that a
// write whose outcome one gateway lost blocks writes through every other
// (docs/ledger.md#a-ledger-a-fleet-shares). It keeps ledger.Store's
// promises with database rows, transactions and advisory locks instead of
// a file, flock and OFD locks.
//
// Liveness across machines: each process that begins writes holds one
// session of its own (a dedicated connection) and, on it, a session-level
// advisory lock on its owner key. Its in-flight markers name that key. The
// lock lives exactly as long as the session: a killed process's socket
// closes and the server ends the session at once; a machine that vanishes
// is found out by TCP keepalives within about LivenessTimeout. A marker
// whose owner lock nobody holds is a dead process's: an unknown-outcome
// entry for every reader. An Unknown whose entry cannot be saved takes a
// second advisory lock, on the marker's slot key, before it tries, and
// keeps it until the entry is saved: readers count a marker with a locked
// slot as an entry too. Advisory locks live in the server's memory; they
// need no disk. docs/decisions/0003-ledger.md has the argument.
package pgledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// SchemaVersion is the version of the tables this build reads and writes.
// A database whose mcpx_ledger_meta says more is unreadable
// (ledger.ErrNewerVersion) and is never written.
const SchemaVersion = 1

// DefaultTimeout bounds one database operation of the ledger. A decision
// whose ledger read runs out of time denies writes (LedgerUnreadable).
const DefaultTimeout = 5 * time.Second

// LivenessTimeout is about how long the server takes to end the session
// of a process whose machine vanished (no FIN, no RST): TCP keepalives
// after 5 s idle, every 2 s, 3 probes, and a 10 s limit on unacknowledged
// data. Until then its in-flight writes count as in flight.
const LivenessTimeout = 11 * time.Second

// Advisory lock classes: the first key of the two-key form. Both keys are
// int4; the second is a value of the mcpx_ledger_keys sequence.
const (
	classOwner  int32 = 0x6d637870 // "mcxp": a process's owner lock
	classSlot   int32 = 0x6d637871 // a marker's slot: its Unknown is being saved
	classSchema int32 = 0x6d637872 // creating the tables
)

// Options tune a Store; the zero value is the default.
type Options struct {
	// Timeout bounds each database operation; 0 means DefaultTimeout.
	Timeout time.Duration
}

// Store is the ledger in one PostgreSQL database. It is safe for
// concurrent use; any number of Stores, in any number of processes on any
// number of machines, may share a database.
type Store struct {
	pool    *pgxpool.Pool
	sessCfg *pgx.ConnConfig
	where   string
	timeout time.Duration
	host    string

	schemaMu sync.Mutex
	schemaOK bool

	budgetMu sync.Mutex // serializes creating the budget table
	budgetOK bool       // the budget table exists

	sessMu   sync.Mutex
	sess     *session
	watching bool // the watchdog runs
	stopped  chan struct{}
	wg       sync.WaitGroup

	mu       sync.Mutex
	retry    map[string]*dispatch // endings whose save failed, retried
	retrying bool
	closed   bool
}

// session is a process's owner session: a connection of its own holding
// the owner lock.
type session struct {
	conn  *pgx.Conn
	owner int32
}

// ErrDSN is matched (errors.Is) by Open's error for a connection string
// that does not parse; the message never shows the string.
var ErrDSN = errors.New("the ledger DSN does not parse as a PostgreSQL connection string")

// Open returns the ledger in the database dsn names. It does not connect:
// the tables are created (if missing) by the first operation, and the
// owner session is opened by the first BeginWrite, so a process that only
// reads never holds one. source names where the DSN came from, for the
// error when it does not parse.
func Open(dsn, source string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w (from %s): write it as key=value pairs (host=… dbname=… user=…) or as a postgres:// URL", ErrDSN, source)
	}
	sessCfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w (from %s)", ErrDSN, source)
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "mcpx-policy"
	}
	if sessCfg.RuntimeParams["application_name"] == "" {
		sessCfg.RuntimeParams["application_name"] = "mcpx-policy ledger owner"
	}
	// The server ends the owner session (and drops its locks) when the
	// peer is gone: keepalives and a limit on unacknowledged data.
	for k, v := range map[string]string{"tcp_keepalives_idle": "5", "tcp_keepalives_interval": "2", "tcp_keepalives_count": "3", "tcp_user_timeout": "10000"} {
		if sessCfg.RuntimeParams[k] == "" {
			sessCfg.RuntimeParams[k] = v
		}
	}
	cfg.MaxConns = max(cfg.MaxConns, 8)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	s := &Store{pool: pool, sessCfg: sessCfg, where: describe(sessCfg), timeout: opts.Timeout, retry: map[string]*dispatch{}, stopped: make(chan struct{})}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	s.host, _ = os.Hostname()
	return s, nil
}

// describe names a database without its password: postgres://user@host:port/db.
func describe(c *pgx.ConnConfig) string {
	host := c.Host
	if !strings.HasPrefix(host, "/") {
		host += ":" + strconv.Itoa(int(c.Port))
	}
	return fmt.Sprintf("postgres://%s@%s/%s", c.User, host, c.Database)
}

// Where names the database without its password.
func (s *Store) Where() string { return s.where }

// Pool is the store's connection pool, for the approval and pin stores of
// the same database (internal/pgstate): a process holds one pool per
// database. Close closes it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Timeout bounds each database operation of the store (Options.Timeout).
func (s *Store) Timeout() time.Duration { return s.timeout }

// Close ends the owner session, which makes this process's writes still in
// flight read as a dead process's, and closes the pool.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stopped)
	s.wg.Wait()
	s.sessMu.Lock()
	if s.sess != nil {
		ctx, cancel := s.ctx()
		s.sess.conn.Close(ctx)
		cancel()
		s.sess = nil
	}
	s.sessMu.Unlock()
	s.pool.Close()
	return nil
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

// unreadable wraps a database error the way the file store reports a bad
// file: writes stay blocked until it reads again.
func (s *Store) unreadable(err error) error {
	var ue *ledger.UnreadableError
	if errors.As(err, &ue) {
		return err
	}
	return &ledger.UnreadableError{Store: "ledger", Path: s.where, Err: err,
		Hint: "check that the database is up and reachable, and that the DSN's user may use the mcpx_ledger_* tables (docs/ledger.md#a-ledger-a-fleet-shares)"}
}

const schemaSQL = `
CREATE TABLE IF NOT EXISTS mcpx_ledger_meta (
	singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	version integer NOT NULL);
INSERT INTO mcpx_ledger_meta (version) VALUES (1) ON CONFLICT DO NOTHING;
CREATE SEQUENCE IF NOT EXISTS mcpx_ledger_keys AS integer CYCLE;
CREATE TABLE IF NOT EXISTS mcpx_ledger_entries (
	id text PRIMARY KEY,
	server text NOT NULL,
	tool text NOT NULL,
	args_sha256 text NOT NULL,
	time text NOT NULL,
	surface text NOT NULL,
	cause text NOT NULL DEFAULT '',
	cleared_at text,
	reason text);
CREATE INDEX IF NOT EXISTS mcpx_ledger_entries_pending ON mcpx_ledger_entries (server, time) WHERE cleared_at IS NULL;
CREATE TABLE IF NOT EXISTS mcpx_ledger_in_flight (
	id text PRIMARY KEY,
	server text NOT NULL,
	tool text NOT NULL,
	args_sha256 text NOT NULL,
	time text NOT NULL,
	surface text NOT NULL,
	owner integer NOT NULL,
	slot integer NOT NULL,
	pid integer NOT NULL,
	host text NOT NULL);
CREATE INDEX IF NOT EXISTS mcpx_ledger_in_flight_server ON mcpx_ledger_in_flight (server);
`

// schema creates the tables if they are missing (under a
// transaction-level advisory lock, so that two processes starting together
// do not race), and checks their version, until that succeeded once.
// Tables an operator made beforehand are only read: the DSN's user needs
// no CREATE privilege then.
func (s *Store) schema(ctx context.Context) error {
	s.schemaMu.Lock()
	defer s.schemaMu.Unlock()
	if s.schemaOK {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass('mcpx_ledger_meta') IS NOT NULL AND to_regclass('mcpx_ledger_in_flight') IS NOT NULL").Scan(&exists); err != nil {
			return err
		}
		if !exists {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::integer, 0)", classSchema); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, schemaSQL); err != nil {
				return err
			}
		}
		var v int
		if err := tx.QueryRow(ctx, "SELECT version FROM mcpx_ledger_meta").Scan(&v); err != nil {
			return err
		}
		if v > SchemaVersion {
			return fmt.Errorf("%w: the tables have version %d, this build reads %d", ledger.ErrNewerVersion, v, SchemaVersion)
		}
		return nil
	})
	if err != nil {
		return s.unreadable(fmt.Errorf("the ledger tables: %w", err))
	}
	s.schemaOK = true
	return nil
}

// marker is an in-flight row as a reader sees it.
type marker struct {
	ledger.Marker
	host    string
	unsaved bool // its slot is locked: an Unknown being saved
	dead    bool // nobody holds its owner lock
}

// entry classifies a marker for readers: an entry (unsaved or dead), or
// a write in flight.
func (m marker) entry() (ledger.Entry, bool) {
	switch {
	case m.unsaved:
		return ledger.Entry{LedgerEntry: m.LedgerEntry,
			Cause: fmt.Sprintf("outcome unknown; process %d on %s could not save the entry yet and keeps retrying", m.Owner.PID, m.host)}, true
	case m.dead:
		return deadEntry(m), true
	}
	return ledger.Entry{}, false
}

func deadEntry(m marker) ledger.Entry {
	return ledger.Entry{LedgerEntry: m.LedgerEntry,
		Cause: fmt.Sprintf("process %d on %s exited while the call was in flight (its database session ended)", m.Owner.PID, m.host)}
}

// markersSQL reads markers and tests their locks: a slot that cannot be
// locked shared is held by an Unknown being saved; an owner key that can
// be is held by nobody, so its process is gone. The shared locks taken
// are the transaction's and go with it.
const markersSQL = `SELECT id, server, tool, args_sha256, time, surface, owner, slot, pid, host,
	NOT pg_try_advisory_xact_lock_shared($1::integer, slot),
	pg_try_advisory_xact_lock_shared($2::integer, owner)
FROM mcpx_ledger_in_flight`

func scanMarkers(rows pgx.Rows) ([]marker, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (marker, error) {
		var m marker
		var owner, slot, pid int32
		err := r.Scan(&m.ID, &m.Server, &m.Tool, &m.ArgsSHA256, &m.Time, &m.Surface, &owner, &slot, &pid, &m.host, &m.unsaved, &m.dead)
		m.Owner = ledger.Owner{PID: int(pid), Host: m.host, Key: int64(owner)}
		m.Slot = int64(slot)
		return m, err
	})
}

const entryCols = "id, server, tool, args_sha256, time, surface, cause"

func scanEntries(rows pgx.Rows) ([]ledger.Entry, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.Entry, error) {
		var e ledger.Entry
		err := r.Scan(&e.ID, &e.Server, &e.Tool, &e.ArgsSHA256, &e.Time, &e.Surface, &e.Cause)
		return e, err
	})
}

// maxViews bounds how often a reader reads again because a marker it
// found in flight was gone by the end of its read; the last attempt counts
// every marker with a live owner as an entry (fail closed).
const maxViews = 8

// view runs one read: the markers first (where, args filter them), then
// read on the entries, then a check that every marker it found in flight
// is still a marker. A marker that left meanwhile may have become an entry
// after the entries' snapshot (an Unknown saved, a dead owner recovered):
// then it reads again. A marker still there at the end was in flight when
// its locks were tested: its slot was free, so no Unknown had started, and
// its owner held its lock.
func (s *Store) view(where string, args []any, read func(ctx context.Context, tx pgx.Tx, markers []marker) error) error {
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.schema(ctx); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		again := false
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, markersSQL+where+" ORDER BY time, id", append([]any{classSlot, classOwner}, args...)...)
			if err != nil {
				return err
			}
			markers, err := scanMarkers(rows)
			if err != nil {
				return err
			}
			var live []string
			for i := range markers {
				if _, isEntry := markers[i].entry(); !isEntry {
					if attempt == maxViews {
						markers[i].unsaved = true
						continue
					}
					live = append(live, markers[i].ID)
				}
			}
			if err := read(ctx, tx, markers); err != nil {
				return err
			}
			if len(live) == 0 {
				return nil
			}
			var n int
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM mcpx_ledger_in_flight WHERE id = ANY($1)", live).Scan(&n); err != nil {
				return err
			}
			again = n != len(live)
			return nil
		})
		if err != nil {
			return s.unreadable(err)
		}
		if !again {
			return nil
		}
	}
}

// Pending returns server's unknown-outcome entries as the policy sees
// them: the oldest limit of them (all when limit < 0) and the total,
// counting the markers of dead processes and of Unknowns being saved. An
// error is an *ledger.UnreadableError: writes are denied with
// LedgerUnreadable.
func (s *Store) Pending(server string, limit int) (ledger.Pending, error) {
	var out ledger.Pending
	err := s.view(" WHERE server = $3", []any{server}, func(ctx context.Context, tx pgx.Tx, markers []marker) error {
		out = ledger.Pending{}
		var extra []ledger.Entry
		var ids []string
		for _, m := range markers {
			if e, ok := m.entry(); ok {
				extra = append(extra, e)
				ids = append(ids, e.ID)
			}
		}
		// A marker converted between the two reads is in both: count it once.
		if len(ids) > 0 {
			rows, err := tx.Query(ctx, "SELECT id FROM mcpx_ledger_entries WHERE id = ANY($1)", ids)
			if err != nil {
				return err
			}
			known, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			extra = slices.DeleteFunc(extra, func(e ledger.Entry) bool { return slices.Contains(known, e.ID) })
		}
		// every id, for the token of what the deny shows (ledger.Seen)
		rows, err := tx.Query(ctx, "SELECT id FROM mcpx_ledger_entries WHERE server = $1 AND cleared_at IS NULL", server)
		if err != nil {
			return err
		}
		pending, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		total := len(pending)
		n := total + len(extra)
		if n > 0 {
			seen := make([]ledger.Entry, 0, n)
			for _, id := range pending {
				seen = append(seen, ledger.Entry{LedgerEntry: decision.LedgerEntry{ID: id, Server: server}})
			}
			seen = append(seen, extra...)
			out.Seen = ledger.Seen(seen, server)
		}
		want := n
		if limit >= 0 && limit < n {
			want = limit
		}
		out.Total = n
		if want == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, "SELECT "+entryCols+" FROM mcpx_ledger_entries WHERE server = $1 AND cleared_at IS NULL ORDER BY time, id LIMIT $2", server, want)
		if err != nil {
			return err
		}
		es, err := scanEntries(rows)
		if err != nil {
			return err
		}
		es = append(es, extra...)
		slices.SortStableFunc(es, func(a, b ledger.Entry) int { return strings.Compare(a.Time, b.Time) })
		out.Entries = make([]decision.LedgerEntry, 0, want)
		for _, e := range es[:want] {
			out.Entries = append(out.Entries, e.LedgerEntry)
		}
		return nil
	})
	if err != nil {
		return ledger.Pending{}, err
	}
	return out, nil
}

// List reads every entry (markers of dead processes and of Unknowns being
// saved included), every write in flight and the cleared entries, in
// clear order.
func (s *Store) List() (ledger.State, error) {
	var st ledger.State
	err := s.view("", nil, func(ctx context.Context, tx pgx.Tx, markers []marker) error {
		st = ledger.State{Entries: []ledger.Entry{}, InFlight: []ledger.Marker{}, Cleared: []ledger.Cleared{}}
		rows, err := tx.Query(ctx, "SELECT "+entryCols+" FROM mcpx_ledger_entries WHERE cleared_at IS NULL ORDER BY time, id")
		if err != nil {
			return err
		}
		if st.Entries, err = scanEntries(rows); err != nil {
			return err
		}
		for _, m := range markers {
			if e, ok := m.entry(); ok {
				if !slices.ContainsFunc(st.Entries, func(x ledger.Entry) bool { return x.ID == e.ID }) {
					st.Entries = append(st.Entries, e)
				}
			} else {
				st.InFlight = append(st.InFlight, m.Marker)
			}
		}
		slices.SortStableFunc(st.Entries, func(a, b ledger.Entry) int { return strings.Compare(a.Time, b.Time) })
		rows, err = tx.Query(ctx, "SELECT "+entryCols+", cleared_at, coalesce(reason, '') FROM mcpx_ledger_entries WHERE cleared_at IS NOT NULL ORDER BY cleared_at, id")
		if err != nil {
			return err
		}
		st.Cleared, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ledger.Cleared, error) {
			var c ledger.Cleared
			err := r.Scan(&c.ID, &c.Server, &c.Tool, &c.ArgsSHA256, &c.Time, &c.Surface, &c.Cause, &c.ClearedAt, &c.Reason)
			return c, err
		})
		if st.Cleared == nil {
			st.Cleared = []ledger.Cleared{}
		}
		st.Seen = ledger.SeenOf(st.Entries)
		return err
	})
	if err != nil {
		return ledger.State{Entries: []ledger.Entry{}, InFlight: []ledger.Marker{}, Cleared: []ledger.Cleared{}, Seen: map[string]string{}}, err
	}
	return st, nil
}

// Counts returns the entries per server, as Pending counts them.
func (s *Store) Counts() (map[string]int, error) {
	out := map[string]int{}
	err := s.view("", nil, func(ctx context.Context, tx pgx.Tx, markers []marker) error {
		clear(out)
		rows, err := tx.Query(ctx, "SELECT server, count(*) FROM mcpx_ledger_entries WHERE cleared_at IS NULL GROUP BY server")
		if err != nil {
			return err
		}
		var server string
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&server, &n}, func() error { out[server] += n; return nil }); err != nil {
			return err
		}
		var ids []string
		for _, m := range markers {
			if _, ok := m.entry(); ok {
				ids = append(ids, m.ID)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, "SELECT id FROM mcpx_ledger_entries WHERE id = ANY($1)", ids)
		if err != nil {
			return err
		}
		known, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, m := range markers {
			if _, ok := m.entry(); ok && !slices.Contains(known, m.ID) {
				out[m.Server]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Check reports whether the ledger reads: the database answers, the
// tables exist (or were just made) and are of a version this build reads.
func (s *Store) Check() error {
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.schema(ctx); err != nil {
		return err
	}
	var v int
	if err := s.pool.QueryRow(ctx, "SELECT version FROM mcpx_ledger_meta").Scan(&v); err != nil {
		return s.unreadable(err)
	}
	if v > SchemaVersion {
		return s.unreadable(fmt.Errorf("%w: the tables have version %d, this build reads %d", ledger.ErrNewerVersion, v, SchemaVersion))
	}
	return nil
}
