// Package pgstate keeps the approval requests and the pinned tool
// definitions in the PostgreSQL database that holds the unknown-outcome
// ledger (internal/ledger/pgledger), so that a fleet of gateways behind a
// load balancer behaves as one: an approval requested through one gateway,
// granted through another, is used once by a third; a pin accepted on one
// holds on all (docs/ledger.md#approvals-and-pins-a-fleet-shares).
//
// It keeps approval.Backend's and pins.Backend's promises with rows and
// transactions instead of a log and a file: a use is a DELETE of the row,
// committed (synchronous_commit) before it returns, under the row's lock,
// so exactly one of any number of gateways wins and a gateway killed at
// any moment leaves the use done or not done, never half; admissions (the
// caps, coalescing) and first pins take a transaction-level advisory lock
// so that counts and first sights are decided one at a time. It uses the
// ledger's connection pool (pgledger.Store.Pool).
package pgstate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// SchemaVersion is the version of the tables this build reads and writes.
// A database whose mcpx_state_meta says more for a store is unreadable
// (ErrNewerVersion of that store) and is never written.
const SchemaVersion = 1

// Advisory lock classes: the first key of the two-key form (the ledger's
// are 0x6d637870–0x6d637872).
const (
	classSchema    int32 = 0x6d637873 // creating the tables
	classApprovals int32 = 0x6d637874 // admitting a request
	classPins      int32 = 0x6d637875 // pinning a tool first seen
)

// DB is the approval and pin stores' database: a pool (the ledger's) and
// what names it. Safe for concurrent use.
type DB struct {
	pool    *pgxpool.Pool
	where   string
	timeout time.Duration

	mu      sync.Mutex
	checked map[string]bool // stores whose tables exist, of a version this build reads
}

// New returns the stores' database on pool, which where names (without a
// password) and each of whose operations timeout bounds. It does not
// connect: the tables are made, if missing, by the first operation.
func New(pool *pgxpool.Pool, where string, timeout time.Duration) *DB {
	return &DB{pool: pool, where: where, timeout: timeout, checked: map[string]bool{}}
}

const schemaSQL = `
CREATE TABLE IF NOT EXISTS mcpx_state_meta (
	store text PRIMARY KEY,
	version integer NOT NULL);
INSERT INTO mcpx_state_meta (store, version) VALUES ('approvals', 1), ('pins', 1) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS mcpx_approvals (
	id text PRIMARY KEY,
	sha256 text NOT NULL,
	server text NOT NULL,
	tool text NOT NULL,
	surface text NOT NULL,
	caller text NOT NULL,
	caller_surface text NOT NULL,
	principal text NOT NULL,
	created timestamptz NOT NULL,
	expires timestamptz NOT NULL,
	state text NOT NULL CHECK (state IN ('pending', 'approved', 'declined')),
	answered timestamptz,
	binding text NOT NULL,
	prompt bytea NOT NULL);
CREATE INDEX IF NOT EXISTS mcpx_approvals_ask ON mcpx_approvals (sha256, binding) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS mcpx_approvals_caller ON mcpx_approvals (caller, principal);
CREATE INDEX IF NOT EXISTS mcpx_approvals_surface ON mcpx_approvals (caller_surface);
CREATE INDEX IF NOT EXISTS mcpx_approvals_expires ON mcpx_approvals (expires);
CREATE TABLE IF NOT EXISTS mcpx_pins (
	server text NOT NULL,
	tool text NOT NULL,
	pinned text NOT NULL,
	pending text,
	accepted timestamptz,
	PRIMARY KEY (server, tool));
`

// schema makes the tables if they are missing (under a transaction-level
// advisory lock, so that processes starting together do not race) and
// checks store's version, until that succeeded once for store. Tables an operator
// made beforehand are only read: the DSN's user needs no CREATE privilege
// then. A newer version is an error matching newer.
func (d *DB) schema(ctx context.Context, store string, newer error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.checked[store] {
		return nil
	}
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass('mcpx_state_meta') IS NOT NULL AND to_regclass('mcpx_approvals') IS NOT NULL AND to_regclass('mcpx_pins') IS NOT NULL").Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::integer, 0)", classSchema); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schemaSQL)
		return err
	})
	if err != nil {
		return fmt.Errorf("the tables: %w", err)
	}
	if err := d.version(ctx, store, newer); err != nil {
		return err
	}
	d.checked[store] = true
	return nil
}

// version checks store's version in mcpx_state_meta.
func (d *DB) version(ctx context.Context, store string, newer error) error {
	var v int
	err := d.pool.QueryRow(ctx, "SELECT version FROM mcpx_state_meta WHERE store = $1", store).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("mcpx_state_meta has no version for %s", store)
	}
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: the %s tables have version %d, this build reads %d", newer, store, v, SchemaVersion)
	}
	return nil
}

// run runs fn in one transaction, after making sure of the schema; an
// error of the database is the store's *UnreadableError. fn returns the
// error of the database only: the outcome it reports to its caller (an
// unknown id, a mismatch) it keeps itself, and the transaction commits.
func (d *DB) run(store, name string, newer error, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	if err := d.schema(ctx, store, newer); err != nil {
		return d.unreadable(name, err)
	}
	if err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error { return fn(ctx, tx) }); err != nil {
		return d.unreadable(name, err)
	}
	return nil
}

// querier is what both a transaction and the pool answer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// read is run without a transaction: for one statement that only reads.
func (d *DB) read(store, name string, newer error, fn func(ctx context.Context, q querier) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	if err := d.schema(ctx, store, newer); err != nil {
		return d.unreadable(name, err)
	}
	if err := fn(ctx, d.pool); err != nil {
		return d.unreadable(name, err)
	}
	return nil
}

// unreadable wraps a database error the way a file store reports a bad
// file: nothing is changed, and the store is not used until it answers.
func (d *DB) unreadable(name string, err error) error {
	return &statedir.UnreadableError{Store: name, Path: d.where, Err: err,
		Hint: "check that the database is up and reachable, and that the DSN's user may use the mcpx_approvals, mcpx_pins and mcpx_state_meta tables (docs/ledger.md#approvals-and-pins-a-fleet-shares)"}
}
