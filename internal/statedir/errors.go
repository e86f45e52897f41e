package statedir

import (
	"errors"
	"fmt"
)

// The kinds of error every store of the state dir shares (the ledger, the
// approvals, the pins). Each store keeps its own errors and wording
// (Kind), and errors.Is matches each to its kind too, so the SDK tells a
// missing entry, pin or request the same way whichever store failed.
var (
	// ErrUnreadable is matched by every *UnreadableError.
	ErrUnreadable = errors.New("store unreadable")
	// ErrNewerVersion is matched by the cause of the *UnreadableError of
	// a store a newer build wrote.
	ErrNewerVersion = errors.New("newer store version")
	// ErrNotFound: what an operation names is not in the store.
	ErrNotFound = errors.New("not found")
	// ErrMismatch: what an operation names is in the store, but not as
	// the caller says (another sha256, another call).
	ErrMismatch = errors.New("mismatch")
)

// Kind is an error with its own text that errors.Is matches to kind too:
// a store's error of one of the shared kinds.
func Kind(kind error, text string) error { return &kindError{kind: kind, text: text} }

type kindError struct {
	kind error
	text string
}

func (e *kindError) Error() string        { return e.text }
func (e *kindError) Is(target error) bool { return target == e.kind }

// UnreadableError reports a store that exists but cannot be used: a file
// that does not decode, a newer format, a state dir or file writable by
// others, a database that does not answer. The store is neither used nor
// overwritten until an operator repairs it. It matches ErrUnreadable.
type UnreadableError struct {
	// Store names the store for people: "ledger", "approval store", "pin
	// store".
	Store string
	// Path is the store's file (or the database, without its password),
	// whichever file is at fault.
	Path string
	// Err is the cause; it names the file at fault.
	Err error
	// Hint, when not empty, says what an operator does about it (a chmod,
	// a chown, moving a file aside).
	Hint string
}

// Error names the store, its file and the cause.
func (e *UnreadableError) Error() string {
	return fmt.Sprintf("%s %s is unreadable: %v", e.Store, e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *UnreadableError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnreadable.
func (e *UnreadableError) Is(target error) bool { return target == ErrUnreadable }
