package pgledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// Write budgets in the database (ledger/budget.go): one row per counted
// write, tallied and inserted in one transaction under a transaction-level
// advisory lock on the server, so every gateway of a fleet checks and
// counts against the same rows, at the database's clock. The row goes in
// before the write's in-flight marker, in a transaction of its own: a
// process that dies between the two, or a marker that fails to go in,
// leaves a write counted that was never sent — a budget errs on the side
// of fewer writes, never more — and the row's key, the dispatch's id,
// makes counting it twice impossible.

// classBudget is the advisory lock class of a server's budget rows.
const classBudget int32 = 0x6d637873

const budgetSQL = `
CREATE TABLE IF NOT EXISTS mcpx_ledger_dispatched (
	id text PRIMARY KEY,
	server text NOT NULL,
	tool text NOT NULL,
	destructive boolean NOT NULL,
	principal text NOT NULL,
	session text NOT NULL,
	call text NOT NULL,
	time timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS mcpx_ledger_dispatched_server ON mcpx_ledger_dispatched (server, time);
`

// budgetTable creates the budget table once (tables of older builds
// have none).
func (s *Store) budgetTable(ctx context.Context) error {
	if err := s.schema(ctx); err != nil {
		return err
	}
	s.budgetMu.Lock()
	defer s.budgetMu.Unlock()
	if s.budgetOK {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::integer, 1)", classSchema); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, budgetSQL)
		return err
	})
	if err != nil {
		return s.unreadable(fmt.Errorf("the budget table: %w", err))
	}
	s.budgetOK = true
	return nil
}

// records reads server's counted writes and the database's time.
func records(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, server string) ([]ledger.Counted, time.Time, error) {
	var now time.Time
	if err := q.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now); err != nil {
		return nil, now, err
	}
	rows, err := q.Query(ctx, "SELECT id, server, tool, destructive, principal, session, call, time FROM mcpx_ledger_dispatched WHERE server = $1", server)
	if err != nil {
		return nil, now, err
	}
	var out []ledger.Counted
	for rows.Next() {
		var r ledger.Counted
		var at time.Time
		if err := rows.Scan(&r.ID, &r.Server, &r.Tool, &r.Destructive, &r.Principal, &r.Session, &r.Call, &at); err != nil {
			rows.Close()
			return nil, now, err
		}
		r.Time = at.UTC().Format(time.RFC3339Nano)
		if at.After(now) {
			now = at // the database's clock went back: never before a row
		}
		out = append(out, r)
	}
	return out, now.UTC(), rows.Err()
}

// Tally counts the budgets of limits for a write to server at the
// database's time. An error is an *ledger.UnreadableError: the caller
// denies the write.
func (s *Store) Tally(server string, limits []ledger.Limit) ([]ledger.Tally, error) {
	if len(limits) == 0 {
		return nil, nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.budgetTable(ctx); err != nil {
		return nil, err
	}
	recs, now, err := records(ctx, s.pool, server)
	if err != nil {
		return nil, s.unreadable(err)
	}
	return ledger.TallyOf(recs, limits, now), nil
}

// BeginCounted is BeginWrite for a write budgets count: the budgets are
// tallied and the write counted in one transaction under the server's
// budget lock; a spent budget records nothing and returns a
// *ledger.BudgetError. c nil is BeginWrite.
func (s *Store) BeginCounted(server, tool string, args map[string]any, surface string, c *ledger.Counting) (ledger.Write, error) {
	if c == nil || len(c.Limits) == 0 {
		return s.BeginWrite(server, tool, args, surface)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if err := s.budgetTable(ctx); err != nil {
		return nil, err
	}
	id := newID()
	var refused *ledger.BudgetError
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::integer, hashtext($2))", classBudget, server); err != nil {
			return err
		}
		recs, now, err := records(ctx, tx, server)
		if err != nil {
			return err
		}
		if c.Retain > 0 {
			if _, err := tx.Exec(ctx, "DELETE FROM mcpx_ledger_dispatched WHERE server = $1 AND time <= $2", server, now.Add(-c.Retain)); err != nil {
				return err
			}
		}
		ts := ledger.TallyOf(recs, c.Limits, now)
		for _, t := range ts {
			if t.Spent() && !c.Shadow {
				refused = &ledger.BudgetError{Tallies: ts}
				return refused
			}
		}
		r := c.Record
		_, err = tx.Exec(ctx, `INSERT INTO mcpx_ledger_dispatched (id, server, tool, destructive, principal, session, call, time)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
			id, server, tool, r.Destructive, r.Principal, r.Session, r.Call, now)
		return err
	})
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, s.unreadable(err)
	}
	return s.beginWithID(id, server, tool, args, surface)
}
