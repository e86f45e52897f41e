package pgstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpx/mcpx-policy/internal/approval"
)

// Approvals is the approval store in the database (approval.Backend):
// one row per request in mcpx_approvals. Safe for concurrent use; any
// number of them, in any processes on any machines, share the table.
type Approvals struct {
	db  *DB
	cfg approval.Config
}

// Approvals returns the approval store of d, with opts.
func (d *DB) Approvals(opts ...approval.Option) *Approvals {
	return &Approvals{db: d, cfg: approval.Configure(opts...)}
}

// Where names the database without its password, and the table.
func (a *Approvals) Where() string { return a.db.where + " (mcpx_approvals)" }

const approvalCols = "id, sha256, server, tool, surface, caller, principal, created, expires, state, answered, binding, prompt"

func scanApproval(row pgx.Row) (approval.Record, error) {
	var r approval.Record
	var answered *time.Time
	var state string
	var prompt []byte
	err := row.Scan(&r.ID, &r.SHA256, &r.Server, &r.Tool, &r.Surface, &r.Caller, &r.Principal, &r.Created, &r.Expires, &state, &answered, &r.Binding, &prompt)
	if err != nil {
		return r, err
	}
	r.State, r.Prompt = approval.State(state), prompt
	r.Created, r.Expires = r.Created.UTC(), r.Expires.UTC()
	if answered != nil {
		r.Answered = answered.UTC()
	}
	return r, nil
}

func (a *Approvals) run(fn func(ctx context.Context, tx pgx.Tx, now time.Time) error) error {
	now := a.cfg.Clock()
	return a.db.run("approvals", "approval store", approval.ErrNewerVersion, func(ctx context.Context, tx pgx.Tx) error {
		return fn(ctx, tx, now)
	})
}

// Request: see approval.Backend. Admissions are decided one at a time,
// fleet-wide, under a transaction-level advisory lock; the expired rows
// are purged on the way.
func (a *Approvals) Request(r approval.Record) (approval.Record, error) {
	if err := approval.CheckRequest(r); err != nil {
		return approval.Record{}, err
	}
	var out approval.Record
	var refused error
	err := a.run(func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		refused = nil
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::integer, 0)", classApprovals); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM mcpx_approvals WHERE expires <= $1", now); err != nil {
			return err
		}
		same, err := scanApproval(tx.QueryRow(ctx, "SELECT "+approvalCols+" FROM mcpx_approvals WHERE sha256 = $1 AND binding = $2 AND state = 'pending' ORDER BY created, id LIMIT 1",
			r.SHA256, r.Binding))
		switch {
		case err == nil:
			out = same
			return nil
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		var c approval.Counts
		err = tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE caller_surface = $1), count(*) FILTER (WHERE caller = $2 AND principal = $3) FROM mcpx_approvals`,
			approval.SurfaceOf(r.Caller), r.Caller, r.Principal).Scan(&c.Live, &c.Surface, &c.Caller)
		if err != nil {
			return err
		}
		if refused = a.cfg.Limits.Admit(r, c); refused != nil {
			return nil
		}
		out = approval.Renew(r, now, a.cfg.TTL)
		prompt := []byte(out.Prompt)
		if prompt == nil {
			prompt = []byte{}
		}
		_, err = tx.Exec(ctx, "INSERT INTO mcpx_approvals ("+approvalCols+", caller_surface) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, $11, $12, $13)",
			out.ID, out.SHA256, out.Server, out.Tool, out.Surface, out.Caller, out.Principal, out.Created, out.Expires, string(out.State), out.Binding, prompt,
			approval.SurfaceOf(out.Caller))
		return err
	})
	if err != nil {
		return approval.Record{}, err
	}
	if refused != nil {
		return approval.Record{}, refused
	}
	return out, nil
}

// locked reads request id for update: the row, or the outcome that ends
// the operation (ErrUnknown; ErrExpired after deleting it).
func locked(ctx context.Context, tx pgx.Tx, id string, now time.Time) (approval.Record, error, error) {
	r, err := scanApproval(tx.QueryRow(ctx, "SELECT "+approvalCols+" FROM mcpx_approvals WHERE id = $1 FOR UPDATE", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("%w: %s", approval.ErrUnknown, id), nil
	}
	if err != nil {
		return r, nil, err
	}
	if !now.Before(r.Expires) {
		if _, err := tx.Exec(ctx, "DELETE FROM mcpx_approvals WHERE id = $1", id); err != nil {
			return r, nil, err
		}
		return r, fmt.Errorf("%w: approval %s expired at %s", approval.ErrExpired, id, r.Expires.Format(time.RFC3339)), nil
	}
	return r, nil, nil
}

// Approve: see approval.Backend.
func (a *Approvals) Approve(id, sha256 string) (approval.Record, error) {
	return a.answer(id, approval.Approved, func(r approval.Record) error {
		switch {
		case r.SHA256 != sha256:
			return fmt.Errorf("%w: approval %s is for the call with sha256 %s, not %s", approval.ErrMismatch, id, r.SHA256, sha256)
		case r.State == approval.Declined:
			return fmt.Errorf("%w: approval %s", approval.ErrDeclined, id)
		}
		return nil
	})
}

// Decline: see approval.Backend.
func (a *Approvals) Decline(id string) (approval.Record, error) {
	return a.answer(id, approval.Declined, func(approval.Record) error { return nil })
}

func (a *Approvals) answer(id string, to approval.State, check func(approval.Record) error) (approval.Record, error) {
	var out approval.Record
	var outcome error
	err := a.run(func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		r, why, err := locked(ctx, tx, id, now)
		out, outcome = r, why
		if err != nil || why != nil {
			return err
		}
		if outcome = check(r); outcome != nil || r.State == to {
			return nil
		}
		out.State, out.Answered = to, now
		_, err = tx.Exec(ctx, "UPDATE mcpx_approvals SET state = $2, answered = $3 WHERE id = $1", id, string(to), now)
		return err
	})
	if err != nil {
		return approval.Record{}, err
	}
	if outcome != nil {
		return approval.Record{}, outcome
	}
	return out, nil
}

// Consume: see approval.Backend. The row is locked, checked and deleted
// in one transaction: of concurrent consumers, the others wait for the
// lock and then find no row.
func (a *Approvals) Consume(id, sha256, binding string) (approval.Record, error) {
	var out approval.Record
	var outcome error
	err := a.run(func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		r, why, err := locked(ctx, tx, id, now)
		out, outcome = r, why
		if err != nil || why != nil {
			return err
		}
		switch {
		case r.SHA256 != sha256:
			outcome = fmt.Errorf("%w: approval %s is for the call with sha256 %s, this call's is %s", approval.ErrMismatch, id, r.SHA256, sha256)
		case r.Binding != binding:
			outcome = fmt.Errorf("%w: approval %s was given for other reasons to ask, another principal or another config revision than this call's now", approval.ErrMismatch, id)
		case r.State == approval.Declined:
			outcome = fmt.Errorf("%w: approval %s", approval.ErrDeclined, id)
		case r.State == approval.Pending:
			outcome = fmt.Errorf("%w: approval %s", approval.ErrNotApproved, id)
			return nil
		}
		_, err = tx.Exec(ctx, "DELETE FROM mcpx_approvals WHERE id = $1", id)
		return err
	})
	if err != nil {
		return approval.Record{}, err
	}
	return out, outcome
}

// Discard: see approval.Backend.
func (a *Approvals) Discard(id string) (bool, error) {
	found := false
	err := a.run(func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		tag, err := tx.Exec(ctx, "DELETE FROM mcpx_approvals WHERE id = $1", id)
		found = tag.RowsAffected() > 0
		return err
	})
	return found, err
}

// List: see approval.Backend.
func (a *Approvals) List() ([]approval.Record, error) {
	var out []approval.Record
	now := a.cfg.Clock()
	err := a.db.read("approvals", "approval store", approval.ErrNewerVersion, func(ctx context.Context, q querier) error {
		rows, err := q.Query(ctx, "SELECT "+approvalCols+" FROM mcpx_approvals WHERE expires > $1 ORDER BY created, id", now)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (approval.Record, error) { return scanApproval(r) })
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []approval.Record{}
	}
	return out, nil
}

// Get: see approval.Backend.
func (a *Approvals) Get(id string) (approval.Record, error) {
	var out approval.Record
	var outcome error
	now := a.cfg.Clock()
	err := a.db.read("approvals", "approval store", approval.ErrNewerVersion, func(ctx context.Context, q querier) error {
		r, err := scanApproval(q.QueryRow(ctx, "SELECT "+approvalCols+" FROM mcpx_approvals WHERE id = $1", id))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			outcome = fmt.Errorf("%w: %s", approval.ErrUnknown, id)
			return nil
		case err != nil:
			return err
		case !now.Before(r.Expires):
			outcome = fmt.Errorf("%w: approval %s expired at %s", approval.ErrExpired, id, r.Expires.Format(time.RFC3339))
		}
		out = r
		return nil
	})
	if err != nil {
		return approval.Record{}, err
	}
	if outcome != nil {
		return approval.Record{}, outcome
	}
	return out, nil
}
