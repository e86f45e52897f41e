// Package pgtest gives tests a PostgreSQL database of their own for the
// ledger: a fresh database on the server MCPX_POLICY_TEST_PG_DSN names,
// dropped when the test ends. `make test` and .ci/run start a throwaway
// server and set the variable (.ci/postgres.sh).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the variable holding the test server's connection string.
const EnvDSN = "MCPX_POLICY_TEST_PG_DSN"

// Base returns the test server's connection string. Without it the test
// fails, saying how to get one; a developer may set it to "skip" to skip
// the PostgreSQL tests, except in CI (CI set), where they always run.
func Base(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	switch {
	case dsn == "skip" && os.Getenv("CI") == "":
		t.Skipf("%s=skip: the PostgreSQL ledger tests are skipped", EnvDSN)
	case dsn == "" || dsn == "skip":
		t.Fatalf("%s is not set: the PostgreSQL ledger tests need a server. Run them through `make test` "+
			"(it starts a throwaway one when PostgreSQL is installed: apt-get install postgresql), or "+
			"`.ci/postgres.sh run -- go test ./...`, or point %s at a database you own "+
			"(outside CI, %s=skip skips them)", EnvDSN, EnvDSN, EnvDSN)
	}
	return dsn
}

// DSN creates a fresh database on the test server and returns a
// connection string for it; the database is dropped (its sessions ended)
// when the test ends.
func DSN(t testing.TB) string {
	t.Helper()
	base := Base(t)
	var b [6]byte
	rand.Read(b[:])
	name := "mcpx_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to the test server (%s): %v", EnvDSN, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating a test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("dropping test database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping test database %s: %v", name, err)
		}
	})
	return WithDatabase(t, base, name)
}

// WithDatabase returns dsn with its database replaced by name.
func WithDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("%s does not parse as a URL", EnvDSN)
		}
		u.Path = "/" + name
		return u.String()
	}
	return dsn + " dbname=" + name // a later keyword wins
}

// WithParam returns dsn with the connection parameter key set to value.
func WithParam(t testing.TB, dsn, key, value string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("%s does not parse as a URL", EnvDSN)
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " " + key + "=" + value
}

// Exec runs sql on dsn's database: what a test does behind the store's
// back (breaking a table, ending a session).
func Exec(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// WaitSessionsGone waits, up to timeout, until dsn's server has no session
// whose application_name is app: the sessions of a killed process end
// when the server notices its sockets closed and finishes what they were
// running.
func WaitSessionsGone(t testing.TB, dsn, app string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Fatalf("waiting for the sessions of %s to end: %v", app, err)
		}
		if n == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
