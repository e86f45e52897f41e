package mcpxpolicy

import (
	"fmt"

	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/ledger"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger"
)

// openStore opens the ledger the config's ledger section names: the file
// in stateDir ("" means DefaultStateDir) by default, or the PostgreSQL
// database a fleet shares (docs/ledger.md#a-ledger-a-fleet-shares).
func openStore(lc config.LedgerConfig, stateDir string) (ledger.Store, error) {
	if lc.Store == config.StorePostgres {
		s, err := pgledger.Open(lc.DSN, lc.Source, pgledger.Options{})
		if err != nil {
			return nil, fmt.Errorf("mcpxpolicy: %w", err)
		}
		return s, nil
	}
	if stateDir == "" {
		d, err := ledger.DefaultStateDir()
		if err != nil {
			return nil, fmt.Errorf("mcpxpolicy: state dir: %w", err)
		}
		stateDir = d
	}
	l, err := ledger.Open(stateDir)
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return l, nil
}

// sameLedger reports whether two ledger sections name the same store.
func sameLedger(a, b config.LedgerConfig) bool { return a.Store == b.Store && a.DSN == b.DSN }

// Writes is the unknown-outcome ledger an Engine with the same Options
// uses, opened without the policy: what `mcpx-policy writes` lists and
// clears. Its methods are safe for concurrent use.
type Writes struct{ s ledger.Store }

// WritesState is the whole ledger: entries, writes in flight and cleared
// entries.
type WritesState = ledger.State

// OpenWrites opens the ledger opts name: the config's ledger section when
// opts.ConfigPaths are given (the config must load), else the file in
// opts.StateDir. It touches nothing until used.
func OpenWrites(opts Options) (*Writes, error) {
	lc := config.LedgerConfig{Store: config.StoreFile}
	if len(opts.ConfigPaths) > 0 {
		c, err := compileConfig(opts)
		if err != nil {
			return nil, err
		}
		lc = c.Ledger
	}
	s, err := openStore(lc, opts.StateDir)
	if err != nil {
		return nil, err
	}
	return &Writes{s: s}, nil
}

// List reads the whole ledger. An unreadable ledger is an error that
// errors.Is matches to ErrLedgerUnreadable.
func (w *Writes) List() (WritesState, error) { return w.s.List() }

// Clear clears a server's unknown-outcome entries (id "" clears all of
// them), keeping each with reason, and returns them. An id that names no
// entry of server is an error errors.Is matches to ErrWriteNotFound.
func (w *Writes) Clear(server, id, reason string) ([]UnknownWrite, error) {
	return w.s.Clear(server, id, reason)
}

// ClearSeen clears a server's unknown-outcome entries when they are
// exactly those a listing showed as seen (WritesState.Seen, or the
// --seen of a printed clear command), and otherwise nothing: an error
// errors.Is matches to ErrWritesChanged (a *WritesChangedError, with the
// entries there are now and their token). An entry another process
// recorded after the listing is never cleared with the listed ones.
func (w *Writes) ClearSeen(server, seen, reason string) ([]UnknownWrite, error) {
	return w.s.ClearSeen(server, seen, reason)
}

// Where names the ledger: the file's path, or the database without its
// password.
func (w *Writes) Where() string { return w.s.Where() }

// Close releases the ledger's connections.
func (w *Writes) Close() error { return w.s.Close() }

// Errors of the ledger, for errors.Is.
var (
	// ErrLedgerUnreadable: the ledger cannot be used (a corrupt or
	// untrusted file, a database that does not answer); writes are denied
	// meanwhile.
	ErrLedgerUnreadable = ledger.ErrUnreadable
	// ErrWriteNotFound: Clear's id names no entry of the server.
	ErrWriteNotFound = ledger.ErrNotFound
	// ErrWritesChanged: ClearSeen's server has other entries than the
	// listing showed; nothing was cleared.
	ErrWritesChanged = ledger.ErrChanged
	// ErrLedgerNewerVersion: a newer build wrote the ledger file; it is
	// left untouched. It comes with ErrLedgerUnreadable.
	ErrLedgerNewerVersion = ledger.ErrNewerVersion
)

// WritesChangedError is ClearSeen's refusal (errors.As): Entries are the
// server's entries now and Now their token, for the operator to look at
// again.
type WritesChangedError = ledger.ChangedError

// WritesSeen is, for each server with entries in es, the token of those
// entries that ClearSeen takes (what a listing shows an operator).
func WritesSeen(es []UnknownWrite) map[string]string { return ledger.SeenOf(es) }

// LedgerUnreadableError is the error (errors.As) of a ledger that exists
// but cannot be used: its Path, the cause and, when not empty, a Hint
// saying what an operator does about it. It matches ErrLedgerUnreadable.
type LedgerUnreadableError = ledger.UnreadableError
