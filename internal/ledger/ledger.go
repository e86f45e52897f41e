// Package ledger is the unknown-outcome ledger (SPEC §4): a versioned JSON
// file that remembers writes whose outcome was lost, so that further writes
// to the same server are denied until an operator clears them.
//
// The file is replaced atomically (google/renameio/v2 plus an fsync of the
// directory) under an exclusive flock on a separate lock file, so several
// processes — a daemon, a proxy, a CLI clear — never lose each other's
// updates. A missing file is an empty ledger; a corrupt, truncated,
// unreadable or newer-version file makes every read and every mutation fail
// with an *UnreadableError and is never overwritten.
//
// A write is tracked through its dispatch lifecycle: Begin makes an
// in-flight marker durable before the request bytes go out; Settle (a
// definite result or error) or Abort (the bytes never went out) removes it;
// Unknown turns it into an unknown-outcome entry. A marker left by a process
// that died becomes an unknown-outcome entry, so a kill -9 at any moment
// leaves either a settled call or an unknown entry — never a lost write.
package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpx/mcpx-policy/internal/decision"
)

// ErrUnreadable is matched (errors.Is) by every error about a ledger file
// that exists but cannot be used: unreadable, corrupt, truncated or of a
// newer version.
var ErrUnreadable = errors.New("ledger unreadable")

// ErrNewerVersion is matched (errors.Is) by the UnreadableError of a file
// written by a newer build (version > Version).
var ErrNewerVersion = errors.New("newer ledger version")

// ErrNotFound is returned by Clear when the id names no unknown-outcome
// entry of that server.
var ErrNotFound = errors.New("no such unknown-outcome entry")

// UnreadableError reports a ledger file that exists but cannot be used.
// The file is left untouched; writes stay blocked until it reads again.
type UnreadableError struct {
	Path string
	Err  error
}

// Error names the file and the cause.
func (e *UnreadableError) Error() string {
	return fmt.Sprintf("ledger %s is unreadable: %v", e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *UnreadableError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnreadable.
func (e *UnreadableError) Is(target error) bool { return target == ErrUnreadable }

// Ledger is the ledger in one state directory. It is safe for concurrent
// use by many goroutines; several Ledgers, in this or other processes, may
// share a directory.
type Ledger struct {
	dir  string
	path string

	mu      sync.Mutex
	queue   []*op
	pending int // submitted, not yet committed
	writing bool
	// retry holds changes whose commit failed: they are applied again with
	// the next commit. Unknowns among them are reported by Entries meanwhile.
	retry map[string]retryOp

	commits uint64 // successful file replacements, for tests and benchmarks

	// The last file List parsed, reused while the bytes are identical, so
	// the per-decision read costs a read and a compare, not a parse of the
	// whole cleared history.
	cacheMu    sync.Mutex
	cacheBytes []byte
	cacheState *fileState
}

// DefaultStateDir is $MCPX_POLICY_STATE_DIR, else $XDG_STATE_HOME/mcpx-policy,
// else ~/.local/state/mcpx-policy. It errors only when none is set and the
// home directory is unknown.
func DefaultStateDir() (string, error) {
	if d := os.Getenv("MCPX_POLICY_STATE_DIR"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "mcpx-policy"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no state directory: set MCPX_POLICY_STATE_DIR or XDG_STATE_HOME: %w", err)
	}
	return filepath.Join(home, ".local", "state", "mcpx-policy"), nil
}

// Open returns the ledger in dir ("" means DefaultStateDir). It touches
// nothing on disk: the directory (0700), the lock file and ledger.json
// (0600) are created by the first change. Open does not read the file, so
// an unreadable file is reported by the first read or change.
func Open(dir string) (*Ledger, error) {
	if dir == "" {
		d, err := DefaultStateDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("ledger: state dir %q: %w", dir, err)
	}
	return &Ledger{dir: abs, path: filepath.Join(abs, FileName), retry: map[string]retryOp{}}, nil
}

// Path is the ledger file's path.
func (l *Ledger) Path() string { return l.path }

// Dir is the state directory.
func (l *Ledger) Dir() string { return l.dir }

// State is a snapshot of the ledger for listing.
type State struct {
	// Entries are the unknown-outcome writes, oldest first. They include
	// in-flight markers whose process is gone (not yet rewritten by
	// Recover or the next change) and unknowns of this process whose commit
	// failed and is being retried.
	Entries []Entry `json:"entries"`
	// InFlight are writes of live processes awaiting their answer.
	InFlight []Marker `json:"in_flight"`
	// Cleared are the entries operators cleared, in clear order.
	Cleared []Cleared `json:"cleared"`
}

// List reads the ledger without locking (the file is only ever replaced
// whole). A missing file is an empty State; any other read problem is an
// *UnreadableError. Safe for concurrent use; it does not write.
func (l *Ledger) List() (State, error) { return l.snapshot(true) }

// snapshot is List; the cleared history is copied only when asked for.
func (l *Ledger) snapshot(withCleared bool) (State, error) {
	st, err := l.readCached()
	if err != nil {
		return State{Entries: []Entry{}, InFlight: []Marker{}, Cleared: []Cleared{}}, err
	}
	s := State{Entries: slices.Clone(st.Entries), Cleared: []Cleared{}, InFlight: []Marker{}}
	if withCleared {
		s.Cleared = slices.Clone(nonNil(st.Cleared))
	}
	self := selfOwner()
	alive := livenessCache{}
	for _, m := range st.InFlight {
		if alive.check(m.Owner, self) {
			s.InFlight = append(s.InFlight, m)
		} else {
			s.Entries = append(s.Entries, deadEntry(m))
		}
	}
	l.mu.Lock()
	for _, r := range l.retry {
		if r.unknown != nil && !containsID(s.Entries, r.unknown.ID) {
			s.Entries = append(s.Entries, *r.unknown)
		}
	}
	l.mu.Unlock()
	s.InFlight = slices.DeleteFunc(s.InFlight, func(m Marker) bool { return containsID(s.Entries, m.ID) })
	slices.SortStableFunc(s.Entries, func(a, b Entry) int { return cmpTime(a.Time, b.Time) })
	s.Entries = nonNil(s.Entries)
	return s, nil
}

// Entries returns the unknown-outcome entries of server as the policy sees
// them (input.ledger.entries), oldest first; nil when there are none. An
// error (always an *UnreadableError for a bad file) means the caller must
// deny writes with LedgerUnreadable. Safe for concurrent use; it does not
// lock and does not write.
func (l *Ledger) Entries(server string) ([]decision.LedgerEntry, error) {
	s, err := l.snapshot(false)
	if err != nil {
		return nil, err
	}
	var out []decision.LedgerEntry
	for _, e := range s.Entries {
		if e.Server == server {
			out = append(out, e.LedgerEntry)
		}
	}
	return out, nil
}

// read loads the file: missing is empty, anything else wrong is an
// *UnreadableError.
func (l *Ledger) read() (*fileState, error) {
	b, err := os.ReadFile(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return emptyState(), nil
	}
	if err != nil {
		return nil, &UnreadableError{Path: l.path, Err: err}
	}
	st, err := decodeFile(b)
	if err != nil {
		return nil, &UnreadableError{Path: l.path, Err: err}
	}
	return st, nil
}

// readCached is read for readers: the state it returns is shared and must
// not be modified. The cache is keyed on the exact file bytes, so it is
// never stale.
func (l *Ledger) readCached() (*fileState, error) {
	b, err := os.ReadFile(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return emptyState(), nil
	}
	if err != nil {
		return nil, &UnreadableError{Path: l.path, Err: err}
	}
	l.cacheMu.Lock()
	st := l.cacheState
	hit := st != nil && bytes.Equal(b, l.cacheBytes)
	l.cacheMu.Unlock()
	if hit {
		return st, nil
	}
	if st, err = decodeFile(b); err != nil {
		return nil, &UnreadableError{Path: l.path, Err: err}
	}
	l.cacheMu.Lock()
	l.cacheBytes, l.cacheState = b, st
	l.cacheMu.Unlock()
	return st, nil
}

func containsID(es []Entry, id string) bool {
	return slices.ContainsFunc(es, func(e Entry) bool { return e.ID == id })
}

// cmpTime orders ledger times. Times this package writes sort as strings;
// a time it cannot parse sorts by its text.
func cmpTime(a, b string) int {
	ta, ea := time.Parse(time.RFC3339Nano, a)
	tb, eb := time.Parse(time.RFC3339Nano, b)
	if ea == nil && eb == nil {
		return ta.Compare(tb)
	}
	return strings.Compare(a, b)
}
