package pgledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// pingEvery is how often the owner session is checked; a session found
// dead is replaced by a new one (a new owner key) at the next BeginWrite.
const pingEvery = 2 * time.Second

// The retrier's backoff, as the file store's.
const (
	retryFirst = 20 * time.Millisecond
	retryMax   = 2 * time.Second
)

// ownerLocked returns the live owner session, opening one (and starting its
// watchdog) if there is none. The caller holds sessMu.
func (s *Store) ownerLocked(ctx context.Context) (*session, error) {
	if s.sess != nil {
		return s.sess, nil
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, errors.New("ledger: the store is closed")
	}
	conn, err := pgx.ConnectConfig(ctx, s.sessCfg)
	if err != nil {
		return nil, err
	}
	var key int32
	err = conn.QueryRow(ctx, "SELECT nextval('mcpx_ledger_keys')::integer").Scan(&key)
	if err == nil {
		_, err = conn.Exec(ctx, "SELECT pg_advisory_lock($1::integer, $2::integer)", classOwner, key)
	}
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	s.sess = &session{conn: conn, owner: key}
	if !s.watching {
		s.watching = true
		s.startWatchdog()
	}
	return s.sess, nil
}

// startWatchdog pings the owner session every pingEvery until Close; a
// failed ping closes it, so that the next BeginWrite opens a new one. Its
// markers read as a dead process's from the moment the server ended it.
func (s *Store) startWatchdog() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stopped:
				return
			case <-t.C:
			}
			s.sessMu.Lock()
			if s.sess != nil {
				ctx, cancel := s.ctx()
				if err := s.sess.conn.Ping(ctx); err != nil {
					s.sess.conn.Close(ctx)
					s.sess = nil
				}
				cancel()
			}
			s.sessMu.Unlock()
		}
	}()
}

// dispatch is one write on its way to a server.
type dispatch struct {
	ledger.Lifecycle
	s     *Store
	owner int32
	slot  int32

	mu   sync.Mutex
	done bool
	// the ending whose save failed, retried: unknown nil for a removal
	unknown *ledger.Entry
	held    bool // this process holds the slot lock
}

// BeginWrite records an in-flight marker for a write and returns once the
// database committed it: only then may the request bytes go out. The
// marker names this process's owner session; if the session ends before
// the dispatch does (the process dies, the machine vanishes), the marker
// is an unknown-outcome entry for every reader.
//
// Errors: server or tool empty, args that are not JSON, or an
// *ledger.UnreadableError when the database cannot be used (nothing was
// recorded, and the request must not be sent).
func (s *Store) BeginWrite(server, tool string, args map[string]any, surface string) (ledger.Write, error) {
	return s.beginWithID(newID(), server, tool, args, surface)
}

// beginWithID is BeginWrite with the dispatch's id given.
func (s *Store) beginWithID(id, server, tool string, args map[string]any, surface string) (ledger.Write, error) {
	entry, err := ledger.NewEntry(id, server, tool, args, surface)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.schema(ctx); err != nil {
		return nil, err
	}
	d := &dispatch{s: s}
	d.Init(entry, d.end)
	// The marker goes in only while its owner lock is held, which proves
	// the owner session alive at that moment; a session that ended
	// unnoticed is replaced and the insert tried once more.
	for attempt := 0; ; attempt++ {
		s.sessMu.Lock()
		sess, err := s.ownerLocked(ctx)
		s.sessMu.Unlock()
		if err != nil {
			return nil, s.unreadable(fmt.Errorf("the owner session: %w", err))
		}
		d.owner = sess.owner
		err = s.pool.QueryRow(ctx, `INSERT INTO mcpx_ledger_in_flight (id, server, tool, args_sha256, time, surface, owner, slot, pid, host)
			SELECT $1, $2, $3, $4, $5, $6, $7, nextval('mcpx_ledger_keys')::integer, $8, $9
			WHERE NOT pg_try_advisory_xact_lock_shared($10::integer, $7::integer) RETURNING slot`,
			entry.ID, server, tool, entry.ArgsSHA256, entry.Time, surface, sess.owner, int32(os.Getpid()), s.host, classOwner).Scan(&d.slot)
		switch {
		case err == nil:
			return d, nil
		case errors.Is(err, pgx.ErrNoRows) && attempt == 0:
			s.dropSession(sess)
			continue
		case errors.Is(err, pgx.ErrNoRows):
			return nil, s.unreadable(errors.New("the owner session ends as soon as it is opened"))
		}
		// The commit may have happened though its answer was lost: take
		// the marker out in the background, or it would read as an entry
		// once this process is gone.
		d.done = true
		s.addRetry(d)
		return nil, s.unreadable(err)
	}
}

// dropSession closes sess if it is still the owner session, so that the
// next BeginWrite opens a new one.
func (s *Store) dropSession(sess *session) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if s.sess == sess {
		ctx, cancel := s.ctx()
		s.sess.conn.Close(ctx)
		cancel()
		s.sess = nil
	}
}

func (d *dispatch) end(unknown *ledger.Entry) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return nil
	}
	d.done = true
	d.unknown = unknown
	if unknown != nil {
		d.held = d.s.lockSlot(d.owner, d.slot)
	}
	if err := d.s.save(d); err != nil {
		d.s.addRetry(d)
		return err
	}
	return nil
}

// lockSlot takes the slot lock on the owner session that began the
// dispatch; it reports false when that session is gone (the marker then
// reads as a dead process's) or the lock could not be had.
func (s *Store) lockSlot(owner, slot int32) bool {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if s.sess == nil || s.sess.owner != owner {
		return false
	}
	ctx, cancel := s.ctx()
	defer cancel()
	_, err := s.sess.conn.Exec(ctx, "SELECT pg_advisory_lock($1::integer, $2::integer)", classSlot, slot)
	return err == nil
}

// unlockSlot releases lockSlot's lock, once the entry is saved.
func (s *Store) unlockSlot(owner, slot int32) {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if s.sess == nil || s.sess.owner != owner {
		return // the session, and its locks, are gone
	}
	ctx, cancel := s.ctx()
	defer cancel()
	s.sess.conn.Exec(ctx, "SELECT pg_advisory_unlock($1::integer, $2::integer)", classSlot, slot)
}

// save applies a dispatch's ending: the marker removed and, for an
// Unknown, the entry added in the same transaction (unless an operator
// cleared it meanwhile, or it is there already); then the slot lock goes.
func (s *Store) save(d *dispatch) error {
	ctx, cancel := s.ctx()
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM mcpx_ledger_in_flight WHERE id = $1", d.ID()); err != nil {
			return err
		}
		if d.unknown == nil {
			return nil
		}
		e := d.unknown
		_, err := tx.Exec(ctx, `INSERT INTO mcpx_ledger_entries (id, server, tool, args_sha256, time, surface, cause)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
			e.ID, e.Server, e.Tool, e.ArgsSHA256, e.Time, e.Surface, e.Cause)
		return err
	})
	if err != nil {
		return s.unreadable(err)
	}
	if d.held {
		s.unlockSlot(d.owner, d.slot)
		d.held = false
	}
	return nil
}

// addRetry keeps an ending whose save failed and makes sure the retrier
// runs.
func (s *Store) addRetry(d *dispatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retry[d.ID()] = d
	if !s.retrying && !s.closed {
		s.retrying = true
		s.wg.Add(1)
		go s.retryLoop()
	}
}

// retryLoop saves the failed endings again, waiting retryFirst, then
// twice as long after each failure up to retryMax, until none is left or
// the store closes.
func (s *Store) retryLoop() {
	defer s.wg.Done()
	delay := retryFirst
	for {
		select {
		case <-s.stopped:
			return
		case <-time.After(delay):
		}
		s.mu.Lock()
		pending := make([]*dispatch, 0, len(s.retry))
		for _, d := range s.retry {
			pending = append(pending, d)
		}
		s.mu.Unlock()
		failed := false
		for _, d := range pending {
			if d.unknown != nil && !d.held {
				d.held = s.lockSlot(d.owner, d.slot)
			}
			if err := s.save(d); err != nil {
				failed = true
				continue
			}
			s.mu.Lock()
			delete(s.retry, d.ID())
			s.mu.Unlock()
		}
		s.mu.Lock()
		if len(s.retry) == 0 {
			s.retrying = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if failed {
			delay = min(2*delay, retryMax)
		} else {
			delay = retryFirst
		}
	}
}

// Recover turns the markers of processes whose owner session ended into
// unknown-outcome entries now and returns how many. Readers count them as
// entries already; Recover writes them down. Markers of live sessions,
// other gateways' included, are left alone.
func (s *Store) Recover() (int, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.schema(ctx); err != nil {
		return 0, err
	}
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		n = 0
		rows, err := tx.Query(ctx, markersSQL+" ORDER BY time, id", classSlot, classOwner)
		if err != nil {
			return err
		}
		markers, err := scanMarkers(rows)
		if err != nil {
			return err
		}
		for _, m := range markers {
			if !m.dead || m.unsaved {
				continue
			}
			c, err := convert(ctx, tx, m, deadEntry(m), "", "")
			if err != nil {
				return err
			}
			n += c
		}
		return nil
	})
	if err != nil {
		return 0, s.unreadable(err)
	}
	return n, nil
}

// convert removes marker m and, if it was still there, adds e for it:
// pending, or cleared at clearedAt with reason when clearedAt is set. It
// returns 1 when it converted the marker.
func convert(ctx context.Context, tx pgx.Tx, m marker, e ledger.Entry, clearedAt, reason string) (int, error) {
	tag, err := tx.Exec(ctx, "DELETE FROM mcpx_ledger_in_flight WHERE id = $1", m.ID)
	if err != nil || tag.RowsAffected() == 0 {
		return 0, err // gone meanwhile: its owner or another reader ended it
	}
	var at, why any
	if clearedAt != "" {
		at, why = clearedAt, reason
	}
	_, err = tx.Exec(ctx, `INSERT INTO mcpx_ledger_entries (id, server, tool, args_sha256, time, surface, cause, cleared_at, reason)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
		e.ID, e.Server, e.Tool, e.ArgsSHA256, e.Time, e.Surface, e.Cause, at, why)
	return 1, err
}

// Clear clears server's unknown-outcome entries — the one with id, or all
// of them when id is "" — keeping each with the time and reason, and
// returns them. Markers of dead processes and of Unknowns being saved are
// entries and are cleared too (the owner's late save adds nothing for a
// cleared id); writes in flight are never touched. Errors: server empty;
// ledger.ErrNotFound (wrapped) when id names no entry of server; an
// *ledger.UnreadableError when the database cannot be used.
func (s *Store) Clear(server, id, reason string) ([]ledger.Entry, error) {
	return s.clear(server, id, nil, reason)
}

// ClearSeen clears server's entries when they are exactly the ones a
// listing showed as seen (ledger.Seen) — checked in the transaction that
// clears them, so an entry another gateway records meanwhile is either
// seen by the check (and nothing is cleared: a *ledger.ChangedError) or
// committed after it and left — and otherwise as Clear with id "".
func (s *Store) ClearSeen(server, seen, reason string) ([]ledger.Entry, error) {
	return s.clear(server, "", func(out []ledger.Entry) error {
		if now := ledger.Seen(out, server); now != seen {
			return &ledger.ChangedError{Server: server, Seen: seen, Now: now, Entries: out}
		}
		return nil
	}, reason)
}

// clear is Clear, and ClearSeen when check is set: check sees the entries
// about to be cleared, and its error rolls the transaction back.
func (s *Store) clear(server, id string, check func([]ledger.Entry) error, reason string) ([]ledger.Entry, error) {
	if server == "" {
		return nil, errors.New("ledger: clear: server is required")
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.schema(ctx); err != nil {
		return nil, err
	}
	var out []ledger.Entry
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = nil
		now := time.Now().UTC().Format(ledger.TimeFormat)
		q := markersSQL + " WHERE server = $3"
		args := []any{classSlot, classOwner, server}
		if id != "" {
			q += " AND id = $4"
			args = append(args, id)
		}
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		markers, err := scanMarkers(rows)
		if err != nil {
			return err
		}
		for _, m := range markers {
			e, ok := m.entry()
			if !ok {
				continue
			}
			c, err := convert(ctx, tx, m, e, now, reason)
			if err != nil {
				return err
			}
			if c > 0 {
				out = append(out, e)
			}
		}
		q = "UPDATE mcpx_ledger_entries SET cleared_at = $2, reason = $3 WHERE server = $1 AND cleared_at IS NULL"
		args = []any{server, now, reason}
		if id != "" {
			q += " AND id = $4"
			args = append(args, id)
		}
		rows, err = tx.Query(ctx, q+" RETURNING "+entryCols, args...)
		if err != nil {
			return err
		}
		es, err := scanEntries(rows)
		if err != nil {
			return err
		}
		out = append(out, es...)
		if id != "" && len(out) == 0 {
			return fmt.Errorf("ledger: clear %s --id %s: %w", server, id, ledger.ErrNotFound)
		}
		if check != nil {
			return check(out)
		}
		return nil
	})
	if errors.Is(err, ledger.ErrNotFound) || errors.Is(err, ledger.ErrChanged) {
		return nil, err
	}
	if err != nil {
		return nil, s.unreadable(err)
	}
	if out == nil {
		out = []ledger.Entry{}
	}
	return out, nil
}

func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

var _ ledger.Store = (*Store)(nil)
